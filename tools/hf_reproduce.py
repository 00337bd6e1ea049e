"""An exported model's test success, measured with transformers in a fresh process:
greedy episodes of T turns on a one-agent text environment's split (math, guess: any
environment the config names), the way mtrl's evaluation plays them, with no mtrl
model or sampler code.

Per task: the chat template renders the system prompt and the task's first prompt;
`generate` (greedy, the config's max_new_tokens, stopping at the tokenizer's eos)
answers; the config's environment (built as the trainer builds it) scores the decoded
answer and writes the feedback; the next turn's input is the previous input, the
generated tokens and the template's delta for the feedback (token-in/token-out, as
mtrl's rollout builds it: mtrl/rollout/formatting.py), until the answer is right or T
turns were played. Prints and writes success by turn, and per task whether it was
solved.

    python -m tools.hf_reproduce --config=experiments/configs/smollm2_guess.py \
        --model=workdir/.../export/agent0 --split=test --out=hf_test.json
"""

from __future__ import annotations

import argparse
import atexit
import json
import pathlib
import time

from mtrl.data.suite import build_suite
from mtrl.envs.registry import build_environment
from mtrl.training.config import module_from_file, parse
from mtrl.training.run.build import build_tokenizer
from mtrl.training.run.provenance import code_state

ROOT = pathlib.Path(__file__).resolve().parents[1]


def suite_and_env(c):
    """(suite, environment) of config `c` as the trainer builds them; one agent only."""
    run = parse(c)
    if run.env.num_agents != 1:
        raise SystemExit(f"error: {run.env.name} with env.num_agents={run.env.num_agents}: "
                         "this tool plays one agent's episodes")
    suite = build_suite(run.data, run.seed)
    tokenizer = build_tokenizer(run.tokenizer, run.model)
    built = build_environment(run.env, run.rollout.num_turns, run.data.name, suite,
                              tokenizer)
    # Text environments hold no process or server; a built one is closed at exit.
    atexit.register(built.close)
    return suite, built.env


def chat_parts(tokenizer, system: str | None) -> tuple[str, str]:
    """(first template, next-turn delta template) with "{}" for the message: the
    rendering of a conversation cut where the messages go (as mtrl derives them)."""
    opening = [] if system is None else [{"role": "system", "content": system}]
    a, b, c = "\x00A\x00", "\x00B\x00", "\x00C\x00"
    first = tokenizer.apply_chat_template(opening + [{"role": "user", "content": a}],
                                          tokenize=False, add_generation_prompt=True)
    full = tokenizer.apply_chat_template(
        opening + [{"role": "user", "content": a}, {"role": "assistant", "content": b},
                   {"role": "user", "content": c}], tokenize=False, add_generation_prompt=True)
    tail = full[full.index(b) + len(b):]
    eos = tokenizer.eos_token
    if tail.startswith(eos):
        tail = tail[len(eos):]  # the generated eos token is kept in the history
    return first.replace(a, "{}"), tail.replace(c, "{}")


def play(model, tokenizer, env, tasks, system, turns: int, max_new_tokens: int):
    import torch
    first, delta = chat_parts(tokenizer, system)
    eos = tokenizer.eos_token_id
    histories = [tokenizer.encode(first.replace("{}", env.reset(t)[1][0], 1),
                                  add_special_tokens=False) for t in tasks]
    states = [env.reset(t)[0] for t in tasks]
    solved_at = [0] * len(tasks)
    transcripts = [[] for _ in tasks]
    for turn in range(1, turns + 1):
        active = [i for i in range(len(tasks)) if not solved_at[i]]
        if not active:
            break
        width = max(len(histories[i]) for i in active)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
        ids = torch.tensor([[pad] * (width - len(histories[i])) + histories[i]
                            for i in active])
        mask = torch.tensor([[0] * (width - len(histories[i])) + [1] * len(histories[i])
                             for i in active])
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                                 max_new_tokens=max_new_tokens, eos_token_id=eos,
                                 pad_token_id=pad, top_p=None, top_k=None, temperature=None)
        for row, i in enumerate(active):
            new = out[row, width:].tolist()
            if eos in new:
                new = new[:new.index(eos) + 1]
            stopped = bool(new) and new[-1] == eos
            text = tokenizer.decode(new, skip_special_tokens=True)
            (result,) = env.step([states[i]], [(text,)], turn)
            states[i] = result.state
            transcripts[i].append({"answer": text, "feedback": result.observations[0]})
            if result.info["correct"]:
                solved_at[i] = turn
            observation = result.observations[0]
            histories[i] = histories[i] + new + tokenizer.encode(
                ("" if stopped else tokenizer.eos_token) + delta.replace("{}", observation, 1),
                add_special_tokens=False)
    return solved_at, transcripts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--model", required=True, help="a Hugging Face model directory")
    parser.add_argument("--split", default="test")
    parser.add_argument("--turns", type=int, default=0, help="0: the config's num_turns")
    parser.add_argument("--limit", type=int, default=0, help="first N tasks (0: all)")
    parser.add_argument("--data_option", action="append", default=[],
                        help="key=value into data.options (an int when it reads as one), "
                             "e.g. kind=mul1x2 for another arith kind")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(args.threads)
    c = module_from_file(args.config).get_config()
    options = dict(c.data.options)
    for item in args.data_option:
        key, value = item.split("=", 1)
        options[key] = int(value) if value.lstrip("-").isdigit() else value
    c.data.options = options
    suite, env = suite_and_env(c)
    tasks = suite.tasks(args.split)[:args.limit or None]
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    turns = args.turns or c.rollout.num_turns
    system = c.chat.system_prompts[0] if c.chat.system_prompts else None
    started = time.perf_counter()
    solved_at, transcripts = play(model, tokenizer, env, tasks, system, turns,
                                  c.rollout.max_new_tokens)
    record = {"code": code_state(), "model": args.model, "config": args.config,
              "split": args.split,
              "data_options": options,
              "tasks": len(tasks), "turns": turns,
              "torch": torch.__version__, "seconds": round(time.perf_counter() - started, 1)}
    for t in range(1, turns + 1):
        record[f"{args.split}_success_turn{t}"] = sum(0 < s <= t for s in solved_at) / len(tasks)
    record[f"{args.split}_success"] = record[f"{args.split}_success_turn{turns}"]
    record["per_task"] = {task.task_id: {"solved_at_turn": s, "turns": tr}
                          for task, s, tr in zip(tasks, solved_at, transcripts)}
    pathlib.Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "per_task"}, indent=1))


if __name__ == "__main__":
    main()
