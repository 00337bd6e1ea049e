"""The ladder a packed layout's bin count is rounded up to, so a run's update compiles
for a few shapes only (`train.bin_buckets`). (Row counts are already few: the rollout's
fixed shape, or a power of two after the zero-advantage filter, row_filter.py.)

A ladder of ratio r > 1 has the rungs

    rung_k = ⌈r^k⌉, k = 0, 1, 2, ...     (duplicates once: r = 1.5 gives 1, 2, 3, 4,
                                          6, 8, 12, 18, 26, 39, ...; r = 2 the powers of 2)

so a count n runs in the smallest rung >= n: at most a factor r + r^(1-k) of padding,
and up to n_max at most log_r(n_max) + 1 distinct counts. "none" keeps n itself (one
program per count met, no padding); "pow2" is r = 2.

Which trade wins depends on what a compile costs against a padded slot (`python -m
bench.layout_reuse`: 40 and 200 replayed SmolLM2-MBPP-like minibatches, tree
packing). On this CPU (compile 35 s, slot 10.6 ms: a compile is worth ~3,300 slots) only
the finest ladder pays: 1.25 saves 74 s net in 40 steps (13 compiles instead of 21, +8%
slots) where 1.5 loses 45 s and pow2 418 s; over 200 steps exact counts win (1.25 then
costs 156 s more, ~1% of the update). On a GPU (compile 10 s, slot 0.0088 ms: ~1.1M
slots) padding is nearly free: pow2 with growth 2 saves 169 s of 210 s of compiles in
40 steps for 1.1 s of padding. Hence "auto" (the default): 1.25 and growth 1 on CPU,
pow2 and growth 2 on an accelerator; "none" for long CPU runs of large models.
"""

from __future__ import annotations

import math

BIN_BUCKET_NAMES = {"none": None, "pow2": 2.0}
DEFAULT_BIN_BUCKETS = "1.25"  # pack_rows' default: the CPU's "auto"
MAX_RATIO = 16.0
# "auto" and layout growth 0 resolve per backend: (bin_buckets, layout_growth).
AUTO_LAYOUT = {"cpu": (DEFAULT_BIN_BUCKETS, 1.0)}
ACCELERATOR_LAYOUT = ("pow2", 2.0)


def resolve_layout(bin_buckets, layout_growth: float, backend: str) -> tuple[str, float]:
    """(ladder spec, growth) with "auto" and growth 0 replaced by the backend's choice
    (module docstring); the spec and growth are checked."""
    auto_buckets, auto_growth = AUTO_LAYOUT.get(backend, ACCELERATOR_LAYOUT)
    spec = auto_buckets if bin_buckets == "auto" else bin_buckets
    ladder_ratio(spec)
    check_layout_growth(layout_growth)
    return spec, (auto_growth if layout_growth == 0 else float(layout_growth))


def check_layout_growth(growth) -> None:
    """0 (the backend's) or a number >= 1: the most slots a reused layout may have, as a
    multiple of the packing's own."""
    ok = (not isinstance(growth, bool) and isinstance(growth, (int, float))
          and (growth == 0 or 1.0 <= growth <= MAX_RATIO))
    if not ok:
        raise ValueError(f"layout_growth must be 0 (the backend's) or a number in "
                         f"[1, {MAX_RATIO:g}], got {growth!r}")


def check_bin_buckets(spec) -> None:
    """"auto" or a spec ladder_ratio reads."""
    if spec != "auto":
        ladder_ratio(spec)


def ladder_ratio(spec) -> float | None:
    """The ratio of a `bin_buckets` spec: "none" -> None, "pow2" -> 2, a number or its
    decimal string ("1.5") -> that number, which must lie in (1, 16]. ("auto" is
    resolve_layout's.)"""
    if isinstance(spec, str) and spec in BIN_BUCKET_NAMES:
        return BIN_BUCKET_NAMES[spec]
    try:
        ratio = float(spec) if not isinstance(spec, bool) else math.nan
    except (TypeError, ValueError):
        ratio = math.nan
    if not 1.0 < ratio <= MAX_RATIO:
        raise ValueError(f"bin_buckets must be 'auto', 'none', 'pow2' or a ratio in "
                         f"(1, {MAX_RATIO:g}] such as '1.5', got {spec!r}")
    return ratio


def bucket_count(n: int, spec) -> int:
    """n (>= 1) rounded up to the ladder of `spec` (module docstring)."""
    n = max(int(n), 1)
    ratio = ladder_ratio(spec)
    if ratio is None:
        return n
    power = 1.0
    while True:
        rung = math.ceil(power * (1 - 1e-12))  # r^k a hair above an integer is that integer
        if rung >= n:
            return rung
        power *= ratio


def ladder(spec, up_to: int) -> tuple[int, ...]:
    """The distinct counts 1..up_to round to: the rungs up to the first >= up_to."""
    return tuple(sorted({bucket_count(n, spec) for n in range(1, up_to + 1)}))
