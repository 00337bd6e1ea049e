"""Seconds per update of an experiment config's SFT warm start, inside the process the
trainer builds (model, sampler, train step, LoRA base: what a run holds while its warm
start trains), for `bench.peak_rss` to measure around it:

    python -m bench.peak_rss --out peak.json -- python -m bench.sft_memory \
        --config experiments/configs/smollm2_arith.py --steps 4 --logits-chunk 0 \
        --set model.hf_checkpoint=/work/models/smollm2-135m-instruct --out steps.json

The updates are the warm start's own (WarmStarter: the suite's demonstrations, its
SFTConfig, run_sft, LoRA's frozen base), for agent 0's first phase, without its
checkpoints; every update is reported (log_every 1, so each ends in a host sync) and
timed. `--logits-chunk` sets model.overrides.logits_chunk (0: the whole head),
`--set a.b=value` any other config field (values read as Python literals, else text).
Writes one JSON object: the config, the settings, seconds of each update, the median
of those after the first (compile), and the process's own peak RSS (VmHWM).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import pathlib
import statistics
import sys
import tempfile
import time

from mtrl.evidence.bench_record import bench_record
from mtrl.evidence.stamp import machine_stamp


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def config_with(path: str, logits_chunk: int | None, sets: list[str], steps: int):
    from mtrl.training.config import module_from_file
    c = module_from_file(path).get_config()
    for item in sets:
        name, _, value = item.partition("=")
        *parents, leaf = name.split(".")
        section = c
        for p in parents:
            section = section[p]
        section[leaf] = _literal(value)
    if logits_chunk is not None:
        c.model.overrides = dict(c.model.overrides, logits_chunk=logits_chunk)
    c.sft.enabled = True
    c.sft.steps = steps
    c.sft.first_phase_steps = 0
    c.train.steps = 0
    return c


def vm_hwm_gb() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1e6
    return 0.0


def _run(config, workdir: str, steps: int):
    """(trainer, examples, seconds of each update, losses, build seconds): the Trainer
    built in `workdir`, then the warm start's updates of agent 0 (module docstring)."""
    from mtrl.rollout.generator import per_agent_formats
    from mtrl.training.loop.trainer import Trainer
    from mtrl.training.sft.sft import run_sft, sft_examples
    from mtrl.training.sft.sft_data import rows_of_kind

    t0 = time.perf_counter()
    trainer = Trainer(config, workdir, show_progress=False)
    build_s = time.perf_counter() - t0
    starter, c = trainer.starter, trainer.c
    s = starter.sft
    pairs = c.suite.demonstrations(c.env, trainer.num_agents, s)
    agent_pairs = [x for a in pairs for x in a] if trainer.shared else pairs[0]
    examples = sft_examples(c.tokenizer, rows_of_kind(agent_pairs, None),
                            per_agent_formats(c.turn_format, trainer.num_agents)[0], s.max_len)
    sft_config = dataclasses.replace(starter.sft_config(steps), log_every=1)
    frozen = None if c.adapters is None else c.base_states()[0]
    times = [time.perf_counter()]
    losses = []

    def log(update, metrics):
        times.append(time.perf_counter())
        losses.append(metrics["loss"])

    run_sft(trainer.graphdef, c.initial_params()[0], examples, sft_config,
            starter.keys.sft(0, 1), log_fn=log, frozen=frozen)
    trainer.close()
    seconds = [round(b - a, 3) for a, b in zip(times, times[1:])]
    return trainer, examples, seconds, losses, build_s


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--logits-chunk", type=int, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    stamp = machine_stamp()

    config = config_with(args.config, args.logits_chunk, args.set, args.steps)
    with tempfile.TemporaryDirectory(prefix="sft_memory_") as workdir:
        trainer, examples, seconds, losses, build_s = _run(config, workdir, args.steps)
    c, s = trainer.c, trainer.starter.sft
    model = c.models[0].config
    results = {
        "config": args.config, "sets": args.set, "steps": args.steps,
        "logits_chunk": model.logits_chunk, "lora_rank": trainer.run_config.lora.rank,
        "dtype": model.dtype, "matmul": model.matmul, "vocab_size": model.vocab_size,
        "batch_size": s.batch_size, "max_len": s.max_len, "examples": len(examples),
        "row_tokens": int(examples.token_mask.sum()),
        "build_s": round(build_s, 1), "step_seconds": seconds,
        "median_step_s_after_first": (statistics.median(seconds[1:]) if len(seconds) > 1
                                      else None),
        "losses": [round(x, 4) for x in losses], "process_peak_rss_gb": round(vm_hwm_gb(), 3),
    }
    record = bench_record(results, stamp)
    pathlib.Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
