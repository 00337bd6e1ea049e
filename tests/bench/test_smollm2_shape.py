"""bench/smollm2_shape.py: the SmolLM2-shaped benchmarks' shared flags and overrides."""

import pathlib

from bench.smollm2_shape import model_overrides, smollm2_parser

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


def parse(*argv):
    parser = smollm2_parser("Title.\n\nBody.", ("f32", "bf16"), "tiny")
    parser.add_argument("--rows", type=int, default=8)  # a script's own flag
    return parser.parse_args(["--out", "x.json", *argv])


def test_defaults_keep_the_full_model_in_float32():
    args = parse()
    assert (args.repeats, args.arms, args.smoke, args.layers, args.rows) == (
        3, "f32,bf16", False, 0, 8)
    assert model_overrides(args) == {"param_dtype": "float32"}


def test_layers_and_smoke_shrink_the_model():
    assert model_overrides(parse("--layers", "4")) == {"param_dtype": "float32",
                                                       "num_layers": 4}
    # smoke wins over --layers: 2 layers and a small vocabulary
    assert model_overrides(parse("--layers", "4", "--smoke")) == {
        "param_dtype": "float32", "num_layers": 2, "vocab_size": 512}


def test_both_benchmarks_use_it():
    for name in ("decode", "update_bf16"):
        source = (BENCH / f"{name}.py").read_text()
        assert "smollm2_parser(" in source and "model_overrides(args)" in source
