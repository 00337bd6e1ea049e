"""Candidate suites for a small pretrained model's learnable band.

For each candidate task generator, on `--num` questions drawn from its train stream:
greedy turn-1 success, sampled turn-1 success (`--samples` answers at temperature 1),
and, for the questions the greedy turn 1 got wrong, greedy turn-2 success after each
feedback message (the conversation: question, the model's answer, the feedback), so
the gain a second turn gives is measured per kind of feedback:

  direction   "<answer> is too high." / "too low." / "No number found." + retry
  unary       "Try again." (UFO's one bit: the answer was wrong)

Transformers' `generate` (torch, CPU) with the model's chat template and the system
prompt below; answers are read like the math environment reads them (last number,
mtrl/envs/math/answer.py) and capped at `--max_new_tokens`. reasoning-gym candidates
need `reasoning_gym` importable (PYTHONPATH); a candidate whose import fails is
recorded with its error.

    python -m tools.smollm2_candidates --model models/smollm2-135m-instruct \
        --num 48 --samples 4 --out /tmp/candidates.json
"""

from __future__ import annotations

import argparse
import json
import random
import time

from mtrl.envs.math.answer import extract_answer, normalize_number

SYSTEM = "You are a calculator. Reply with the number only."
RETRY = " Reply with the number only."


def own_generator(kind: str):
    def draw(rng: random.Random) -> tuple[str, str]:
        if kind == "add2":
            a, b = rng.randint(10, 99), rng.randint(10, 99)
            return f"What is {a} + {b}?", str(a + b)
        if kind == "sub2":
            a, b = rng.randint(10, 99), rng.randint(10, 99)
            return f"What is {a} - {b}?", str(a - b)
        if kind == "mul1x2":
            a, b = rng.randint(2, 9), rng.randint(10, 99)
            return f"What is {a} * {b}?", str(a * b)
        if kind == "add3":
            a, b = rng.randint(100, 999), rng.randint(100, 999)
            return f"What is {a} + {b}?", str(a + b)
        if kind == "add1":
            a, b = rng.randint(1, 9), rng.randint(10, 99)
            return f"What is {a} + {b}?", str(a + b)
        raise ValueError(kind)
    return draw


def gym_generator(name: str):
    import reasoning_gym

    def draw(rng: random.Random) -> tuple[str, str]:
        data = reasoning_gym.create_dataset(name, size=1, seed=rng.randrange(2**31))
        item = data[0]
        return item["question"], str(item["answer"])
    return draw


CANDIDATES = {
    "add1": lambda: own_generator("add1"),
    "add2": lambda: own_generator("add2"),
    "sub2": lambda: own_generator("sub2"),
    "mul1x2": lambda: own_generator("mul1x2"),
    "add3": lambda: own_generator("add3"),
    "rg_basic_arithmetic": lambda: gym_generator("basic_arithmetic"),
    "rg_chain_sum": lambda: gym_generator("chain_sum"),
    "rg_leg_counting": lambda: gym_generator("leg_counting"),
}


def feedback(kind: str, answer: str | None, truth: str) -> str:
    if kind == "unary":
        return "Try again." + RETRY
    if answer is None:
        return "No number found." + RETRY
    high = float(answer) > float(truth)
    return f"{answer} is too {'high' if high else 'low'}." + RETRY


def generate(model, tokenizer, conversations, *, samples: int, max_new_tokens: int,
             seed: int) -> list[list[str]]:
    import torch
    texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
             for c in conversations]
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=max_new_tokens,
                             do_sample=samples > 0, temperature=1.0 if samples else None,
                             top_p=None, top_k=None,
                             num_return_sequences=max(samples, 1),
                             pad_token_id=tokenizer.pad_token_id)
    new = out[:, batch["input_ids"].shape[1]:]
    decoded = tokenizer.batch_decode(new, skip_special_tokens=True)
    k = max(samples, 1)
    return [decoded[i * k:(i + 1) * k] for i in range(len(conversations))]


def right(text: str, truth: str) -> tuple[bool, str | None]:
    answer = extract_answer(text)
    return answer is not None and answer == normalize_number(truth), answer


def measure(name, draw, model, tokenizer, args) -> dict:
    rng = random.Random(f"{name}/{args.seed}")
    tasks = [draw(rng) for _ in range(args.num)]
    first = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]
             for q, _ in tasks]
    started = time.perf_counter()
    greedy = [g[0] for g in generate(model, tokenizer, first, samples=0,
                                     max_new_tokens=args.max_new_tokens, seed=args.seed)]
    sampled = generate(model, tokenizer, first, samples=args.samples,
                       max_new_tokens=args.max_new_tokens, seed=args.seed)
    judged = [right(text, truth) for text, (_, truth) in zip(greedy, tasks)]
    wrong = [i for i, (ok, _) in enumerate(judged) if not ok]
    record = {
        "num": len(tasks),
        "greedy_turn1": sum(ok for ok, _ in judged) / len(tasks),
        "sampled_turn1": sum(right(s, t)[0] for row, (_, t) in zip(sampled, tasks)
                             for s in row) / (len(tasks) * args.samples),
        "no_answer_turn1": sum(a is None for _, a in judged) / len(tasks),
        "examples": [{"question": tasks[i][0], "truth": tasks[i][1], "greedy": greedy[i]}
                     for i in range(3)],
    }
    for kind in ("direction", "unary"):
        second = [first[i] + [{"role": "assistant", "content": greedy[i]},
                              {"role": "user",
                               "content": feedback(kind, judged[i][1], tasks[i][1])}]
                  for i in wrong]
        fixed = 0
        if second:
            replies = generate(model, tokenizer, second, samples=0,
                               max_new_tokens=args.max_new_tokens, seed=args.seed)
            fixed = sum(right(r[0], tasks[i][1])[0] for r, i in zip(replies, wrong))
            record[f"example_turn2_{kind}"] = {"conversation": second[0],
                                               "reply": replies[0][0]}
        record[f"greedy_turn2_{kind}"] = record["greedy_turn1"] + fixed / len(tasks)
        record[f"fixed_of_wrong_{kind}"] = f"{fixed}/{len(wrong)}"
    record["seconds"] = round(time.perf_counter() - started, 1)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="models/smollm2-135m-instruct")
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--num", type=int, default=48)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max_new_tokens", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    results = {"model": args.model, "system": SYSTEM, "args": vars(args), "candidates": {}}
    for name in args.candidates.split(","):
        try:
            draw = CANDIDATES[name]()
            results["candidates"][name] = measure(name, draw, model, tokenizer, args)
        except ImportError as e:
            results["candidates"][name] = {"error": f"{type(e).__name__}: {e}"}
        row = results["candidates"][name]
        print(name, {k: v for k, v in row.items() if not k.startswith("example")}, flush=True)
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
