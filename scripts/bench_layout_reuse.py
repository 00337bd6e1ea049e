"""Compiles saved vs padding added by reusing compiled packed layouts (TrainStep's rule).

    python scripts/bench_layout_reuse.py --out /tmp/layout_reuse.json [--steps 40]

A run's update sees a new packed layout (bins P x budget S) whenever its rows pack
differently; each new (P, S) compiles the train step again (20-50 s for SmolLM2-135M
on this CPU, issue 43). This replays --steps minibatches of SmolLM2-MBPP-like rows
(one agent; 8-40 rows, each a 100-300-token prompt + a 20-200-token completion; two
turns' rows share their prompt) through pack_rows, the way TrainStep does, with and
without the reuse rule (pad into a compiled layout of at most --growth times the
slots), for several growths and both packing modes; seconds saved and added use
--compile-s and --slot-ms (measured elsewhere: see their help). Reported: distinct layouts compiled, computed slots
and dense attention pairs (P·S², what the padding adds in attention FLOPs), and the
padding's share. No model runs: FLOPs are proportional to slots (6·params per slot)
plus attention pairs, so the trade is read in compiles vs extra slots. Extra rows are
free (rows without a loss token are never packed), so a smaller rows shape reuses a
larger compiled one.
"""

from __future__ import annotations

import argparse
import json
import sys
import os

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mtrl.training.update.packing import pack_rows, reusable_layout  # noqa: E402


def minibatch(rng, length: int = 512):
    """[1, B, L] tokens / token_mask / loss_mask of one step's rows."""
    tasks = int(rng.integers(2, 6))
    rows = []
    for _ in range(tasks):
        prompt = list(rng.integers(0, 49152, int(rng.integers(100, 300))))
        for _ in range(int(rng.integers(4, 9))):
            rows.append((prompt, int(rng.integers(20, 200))))
    b = len(rows)
    tokens = np.zeros((1, b, length), np.int32)
    token_mask = np.zeros((1, b, length), bool)
    loss_mask = np.zeros((1, b, length), bool)
    for r, (prompt, new) in enumerate(rows):
        end = min(len(prompt) + new, length)
        tokens[0, r, :len(prompt)] = prompt
        tokens[0, r, len(prompt):end] = rng.integers(0, 49152, end - len(prompt))
        token_mask[0, r, :end] = True
        loss_mask[0, r, len(prompt):end] = True
    # Rows padded to a bucketed count, as the trainer's row layout is (make_batch).
    padded = 1 << (b - 1).bit_length()
    pad = ((0, 0), (0, padded - b), (0, 0))
    return np.pad(tokens, pad), np.pad(token_mask, pad), np.pad(loss_mask, pad)


def replay(batches, mode: str, growth: float | None) -> dict:
    compiled: dict[tuple, set] = {}
    slots = pairs = real_slots = real_pairs = 0
    for tokens, token_mask, loss_mask in batches:
        packed = pack_rows(tokens, token_mask, loss_mask, mode)
        shape = (tokens.shape[1], *packed.tokens.shape[1:])
        layouts = compiled.setdefault((tokens.shape[0], tokens.shape[2]), set())
        use = reusable_layout(shape, layouts, growth) if growth else None
        if use is None:
            layouts.add(shape)
            use = shape
        slots += use[1] * use[2]
        pairs += use[1] * use[2] ** 2
        real_slots += shape[1] * shape[2]
        real_pairs += shape[1] * shape[2] ** 2
    return {"compiles": sum(len(v) for v in compiled.values()), "slots": slots,
            "attention_pairs": pairs, "padding_slot_share": 1 - real_slots / slots,
            "padding_pair_share": 1 - real_pairs / pairs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--growths", default="1.0,1.25,1.5,2.0,3.0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compile-s", type=float, default=35.0,
                        help="seconds one train-step compile costs (issue 43: 20-50 s, SmolLM2)")
    parser.add_argument("--slot-ms", type=float, default=10.6,
                        help="update milliseconds per packed slot (SmolLM2 f32: 16.3 s / 1536)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    batches = [minibatch(rng) for _ in range(args.steps)]
    result = {"steps": args.steps, "compile_s": args.compile_s, "slot_ms": args.slot_ms,
              "row_shapes": sorted({b[0].shape[1] for b in batches}), "modes": {}}
    for mode in ("rows", "tree"):
        before = replay(batches, mode, None)
        result["modes"][mode] = {"without_reuse": before, "growth": {}}
        for growth in [float(g) for g in args.growths.split(",")]:
            after = replay(batches, mode, growth)
            saved = (before["compiles"] - after["compiles"]) * args.compile_s
            cost = (after["slots"] - before["slots"]) * args.slot_ms / 1e3
            result["modes"][mode]["growth"][growth] = {
                **after, "extra_slots": after["slots"] / before["slots"] - 1,
                "compile_s_saved": saved, "padding_s_added": cost, "net_s_saved": saved - cost}
            print(f"{mode} growth {growth}: compiles {before['compiles']} -> "
                  f"{after['compiles']}, slots +{after['slots'] / before['slots'] - 1:.1%} "
                  f"(attention pairs +{after['attention_pairs'] / before['attention_pairs'] - 1:.1%}); "
                  f"saves {saved:.0f} s of compiles, adds {cost:.0f} s of padding")
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
