"""Does a run's SFT warm start copy? Per agent and row kind, the fraction of
demonstration rows whose every completion token is the argmax under teacher forcing
(so greedy decoding reproduces the row exactly), for the run's final SFT weights, on
the train demonstrations SFT used and on demonstrations built the same way from the
validation tasks (values no agent wrote in training).

    python -m tools.sft_copy_check RUN_DIR OUT.json [CONFIG]

RUN_DIR: a finished run of the integer-function family (its sft_checkpoints and
config.json's seed); CONFIG: the experiment file it ran (default: the embedded
default). "revisions" rows are those that change the previous answer (rows_of_kind):
after a mixed phase in which a teacher's resubmissions outnumber them, a greedy
policy that resubmits scores 0 there while still able to copy when it samples. The
measure is the library's (mtrl/training/sft/warm_start_check.py), which a run with
sft.check_min_exact > 0 applies itself right after the first phase.
"""

from __future__ import annotations

import json
import pathlib
import sys

from mtrl.rollout.generator import per_agent_formats
from mtrl.training.config import module_from_file, parse
from mtrl.training.run.build import build_components
from mtrl.training.run.provenance import code_state
from mtrl.training.sft.sft import sft_examples
from mtrl.training.sft.sft_checkpoint import SFTCheckpoints
from mtrl.training.sft.sft_data import rows_of_kind
from mtrl.training.sft.warm_start_check import exact_fraction, heldout_demonstrations
from mtrl.training.policy.optim import OptimConfig, make_optimizer

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROWS = 256  # rows checked per (agent, kind, split)


def _run_code(workdir: pathlib.Path) -> dict | None:
    path = workdir / "provenance.json"
    return json.loads(path.read_text()).get("code") if path.exists() else None


def main(argv: list[str]) -> None:
    if argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return
    if len(argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    workdir, out = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    config_file = argv[3] if len(argv) == 4 else ROOT / "experiments/configs/default.py"
    config = module_from_file(str(config_file)).get_config()
    config.seed = int(json.loads((workdir / "config.json").read_text())["seed"])
    run = parse(config)
    c = build_components(run)
    s = run.sft
    params = c.initial_params()
    template = make_optimizer(OptimConfig(learning_rate=s.learning_rate, b2=s.adam_b2,
                                          schedule=s.schedule, total_steps=s.steps,
                                          warmup_steps=20, max_grad_norm=1.0)).init(params[0])
    checkpoints = SFTCheckpoints(workdir / "sft_checkpoints", out.with_suffix(".sft.jsonl"))
    position, _ = checkpoints.restore(params, template)
    checkpoints.close()
    if position is None:
        sys.exit(f"{workdir}: no SFT checkpoint")
    formats = per_agent_formats(c.turn_format, run.num_agents)
    train_pairs = c.suite.demonstrations(c.env, run.num_agents, s)
    # The same demonstrations from validation tasks (the warm start's check reads them).
    validation_pairs = heldout_demonstrations(c.suite, c.env, run.num_agents, s)
    # The code that measured, and the run's own provenance file (the code that trained).
    result = {"code": code_state(), "runs_code": _run_code(workdir), "workdir": str(workdir),
              "sft_position": [position.agent, position.phase, position.update],
              "exact": {}}
    for a in range(run.num_agents):
        for kind in ("first_turn", "revisions"):
            for name, pairs in (("train", train_pairs), ("validation", validation_pairs)):
                rows = rows_of_kind(pairs[a], kind)
                if not rows:
                    continue
                examples = sft_examples(c.tokenizer, rows, formats[a], s.max_len)
                share, n = exact_fraction(c.policy_graphdef(run.lora), position.params[a],
                                          examples, ROWS)
                result["exact"][f"agent{a}/{kind}/{name}"] = [round(share, 3), n]
                print(f"agent{a} {kind:10s} {name:10s} exact {share:.3f} of {n}", flush=True)
    c.close()
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv)
