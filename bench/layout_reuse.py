"""Compiles saved vs padding added by the update's layout rule: the bin ladder
(train.bin_buckets) and the reuse of compiled layouts (train.layout_growth).

    python -m bench.layout_reuse --out /tmp/layout_reuse.json [--steps 40]

A run's update sees a new packed layout (rows x bins P x budget S) whenever its rows
pack differently; each new layout compiles the train step again (20-50 s for
SmolLM2-135M on this CPU). This replays --steps minibatches of
SmolLM2-MBPP-like rows (one agent; 8-40 rows, each a 100-300-token prompt + a
20-200-token completion; two turns' rows share their prompt) through pack_rows and
TrainStep's rule (bins rounded up to the ladder, then a compiled layout of at
most `growth` times the slots reused), for every ladder in --buckets and growth in
--growths and both packing modes, against the exact layouts (ladder "none", growth 1:
a compile per distinct layout, no padding). Reported per arm: layouts compiled, computed
slots and dense attention pairs (P·S², what padding adds in attention FLOPs), the
padding's share, and seconds saved and added at two measured cost points (COSTS: this
CPU's float32 SmolLM2 update, 35 s a compile and 10.6 ms a slot; the H200's, 10 s and
0.0088 ms, BENCHMARKS.md, GPU). No model runs: FLOPs are proportional to
slots (6·params per slot) plus attention pairs, so the trade is read in
compiles vs extra slots. Extra rows are free (rows without a loss token are never
packed), so a smaller rows shape reuses a larger compiled one.
"""

from __future__ import annotations

import argparse

import numpy as np

from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.training.update.buckets import bucket_count
from mtrl.training.update.packing import pack_rows, reusable_layout


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


def exact_shapes(batches, mode: str) -> list[tuple[int, int, int, int]]:
    """(rows, bins needed, budget, agents) of each minibatch's packing, before any ladder."""
    shapes = []
    for tokens, token_mask, loss_mask in batches:
        packed = pack_rows(tokens, token_mask, loss_mask, mode, bin_buckets="none")
        shapes.append((tokens.shape[1], *packed.tokens.shape[1:], tokens.shape[0]))
    return shapes


def replay(shapes, buckets: str, growth: float) -> dict:
    """TrainStep's layout rule over the minibatches: bins rounded up to the ladder
    `buckets` (what pack_rows does), then run in a compiled layout
    of at most `growth` times the slots when one exists (reusable_layout)."""
    compiled: set = set()
    compile_steps = []
    slots = pairs = real_slots = real_pairs = 0
    for step, (rows, bins, budget, agents) in enumerate(shapes):
        shape = (rows, bucket_count(bins, buckets), budget)
        use = reusable_layout(shape, compiled, growth)
        if use is None:
            compiled.add(shape)
            compile_steps.append(step)
            use = shape
        slots += agents * use[1] * use[2]
        pairs += agents * use[1] * use[2] ** 2
        real_slots += agents * bins * budget
        real_pairs += agents * bins * budget ** 2
    return {"compiles": len(compiled), "layouts": sorted(compiled), "slots": slots,
            "compile_steps": compile_steps,
            "attention_pairs": pairs, "padding_slot_share": 1 - real_slots / slots,
            "padding_pair_share": 1 - real_pairs / pairs}


COSTS = {"cpu": (35.0, 10.6), "gpu": (10.0, 0.0088)}  # (compile s, ms per slot)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--buckets", default="none,1.25,1.5,pow2,3",
                        help="bin ladders (train.bin_buckets) to replay")
    parser.add_argument("--growths", default="1.0,1.5,2.0,3.0")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    stamp = machine_stamp()
    rng = np.random.default_rng(args.seed)
    batches = [minibatch(rng) for _ in range(args.steps)]
    result = {"steps": args.steps, "costs": {k: {"compile_s": c, "slot_ms": m}
                                             for k, (c, m) in COSTS.items()},
              "row_shapes": sorted({b[0].shape[1] for b in batches}), "modes": {}}
    for mode in ("rows", "tree"):
        shapes = exact_shapes(batches, mode)
        base = replay(shapes, "none", 1.0)  # every distinct exact layout compiles
        arms = result["modes"][mode] = {
            "budgets": sorted({s[2] for s in shapes}),
            "bins_needed": sorted({s[1] for s in shapes}), "arms": []}
        for buckets in args.buckets.split(","):
            for growth in [float(g) for g in args.growths.split(",")]:
                arm = replay(shapes, buckets, growth)
                arm.update(buckets=buckets, growth=growth,
                           extra_slots=arm["slots"] / base["slots"] - 1)
                line = (f"{mode} buckets {buckets:>4} growth {growth}: compiles "
                        f"{base['compiles']} -> {arm['compiles']} (last at step "
                        f"{arm['compile_steps'][-1]}), slots +{arm['extra_slots']:.1%}")
                for name, (compile_s, slot_ms) in COSTS.items():
                    saved = (base["compiles"] - arm["compiles"]) * compile_s
                    added = (arm["slots"] - base["slots"]) * slot_ms / 1e3
                    arm[name] = {"compile_s_saved": saved, "padding_s_added": added,
                                 "net_s_saved": saved - added}
                    line += f"; {name} saves {saved:.0f} s, adds {added:.1f} s"
                arms["arms"].append(arm)
                print(line)
    write_record(args.out, result, stamp)


if __name__ == "__main__":
    main()
