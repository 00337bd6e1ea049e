"""The flags and model overrides the SmolLM2-135M-shaped benchmarks share
(bench.decode, bench.update_bf16): one definition instead of one per benchmark.

    parser = smollm2_parser(__doc__, arms, smoke_help)   # --out --repeats --arms --smoke --layers
    overrides = model_overrides(args)                     # for mtrl.models.preset
"""

from __future__ import annotations

import argparse
from typing import Sequence


def smollm2_parser(doc: str, arms: Sequence[str], smoke_help: str) -> argparse.ArgumentParser:
    """A parser with the shared flags; the script adds its own shape flags."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--arms", default=",".join(arms))
    parser.add_argument("--smoke", action="store_true", help=smoke_help)
    parser.add_argument("--layers", type=int, default=0,
                        help="fewer decoder layers than SmolLM2's 30 (same widths and "
                             "vocabulary): a shorter run on a loaded machine")
    return parser


def model_overrides(args: argparse.Namespace) -> dict:
    """float32 parameters; --layers' depth; --smoke: 2 layers and a 512-token vocabulary
    (the script shrinks its own shapes)."""
    overrides = dict(param_dtype="float32")
    if args.layers:
        overrides["num_layers"] = args.layers
    if args.smoke:
        overrides.update(num_layers=2, vocab_size=512)
    return overrides
