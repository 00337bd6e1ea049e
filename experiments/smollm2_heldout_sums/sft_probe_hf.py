"""The held-out-sums study's probe: the warm start's band measured with transformers alone.

mtrl's own SFT warm start of experiments/configs/smollm2_arith.py was killed twice by
the shared machine's OOM killer (6.5-8.2 GB, the largest process while others held
13-17 GB), so this measures what the same warm start recipe gives at a third of the
memory: full fine-tuning of SmolLM2-135M-Instruct in torch (float32, AdamW, learning
rate 5e-5 with a cosine decay, 32 updates of 16 rows, as the config's sft section),
rows = the chat template's first prompt (system prompt + train question) -> the sum
and the end-of-turn token, loss on the completion only; then greedy two-turn episodes
with the "too high / too low" feedback on the validation and test splits, played by
tools/hf_reproduce.py's `play` (the math environment scores and answers).

    python experiments/smollm2_heldout_sums/sft_probe_hf.py \
        --out experiments/smollm2_heldout_sums/sft_probe_hf.json --save models/smollm2-arith-sft-hf
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import random
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from mtrl.training.config import module_from_file  # noqa: E402

hf = module_from_file(ROOT / "tools" / "hf_reproduce.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "experiments/configs/smollm2_arith.py"))
    parser.add_argument("--model", default=str(ROOT / "models/smollm2-135m-instruct"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--save", default="")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    c = module_from_file(args.config).get_config()
    suite, env = hf.suite_and_env(c)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    system = c.chat.system_prompts[0]
    first, _ = hf.chat_parts(tokenizer, system)
    s = c.sft
    train = suite.tasks("train")
    rng = random.Random(0)
    order = list(range(len(train)))
    rng.shuffle(order)
    optimizer = torch.optim.AdamW(model.parameters(), lr=s.learning_rate, weight_decay=0.0,
                                  betas=(0.9, s.adam_b2))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda i: 0.5 * (1 + math.cos(math.pi * min(i, s.steps) / s.steps)))
    record = {"config": args.config, "sft": {"steps": s.steps, "batch_size": s.batch_size,
                                             "learning_rate": s.learning_rate},
              "losses": []}
    started = time.perf_counter()
    model.train()
    for update in range(s.steps):
        rows = [train[order[(update * s.batch_size + i) % len(order)]]
                for i in range(s.batch_size)]
        prompts = [tokenizer.encode(first.replace("{}", env.reset(t)[1][0], 1),
                                    add_special_tokens=False) for t in rows]
        answers = [tokenizer.encode(t.answer, add_special_tokens=False)
                   + [tokenizer.eos_token_id] for t in rows]
        width = max(len(p) + len(a) for p, a in zip(prompts, answers))
        ids = torch.full((len(rows), width), tokenizer.eos_token_id)
        labels = torch.full((len(rows), width), -100)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (p, a) in enumerate(zip(prompts, answers)):
            ids[i, :len(p) + len(a)] = torch.tensor(p + a)
            labels[i, len(p):len(p) + len(a)] = torch.tensor(a)
            mask[i, :len(p) + len(a)] = 1
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        record["losses"].append(round(float(loss), 4))
        print(f"update {update + 1}: loss {float(loss):.4f}", flush=True)
    record["sft_seconds"] = round(time.perf_counter() - started, 1)
    model.eval()
    if args.save:
        model.save_pretrained(args.save)
        tokenizer.save_pretrained(args.save)
    for split in ("validation", "test"):
        tasks = suite.tasks(split)
        solved_at, transcripts = hf.play(model, tokenizer, env, tasks, system,
                                         c.rollout.num_turns, c.rollout.max_new_tokens)
        record[split] = {f"success_turn{t}": sum(0 < x <= t for x in solved_at) / len(tasks)
                         for t in range(1, c.rollout.num_turns + 1)}
        record[split]["tasks"] = len(tasks)
        record[split]["transcripts"] = {t.task_id: tr for t, tr in
                                        list(zip(tasks, transcripts))[:6]}
        print(split, {k: v for k, v in record[split].items() if k != "transcripts"},
              flush=True)
        pathlib.Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    record["seconds"] = round(time.perf_counter() - started, 1)
    pathlib.Path(args.out).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
