"""Provenance of finished runs: for each run directory, the commit and dirty state of
the checkout that ran it, the resolved config's hash, the warm start it started from
(train.init_from) with its checkpoint digest, the Hugging Face weights it loaded
(model.hf_checkpoint) with their digest, and the numbers its summary reports, written
as one JSON file.

The commit is read at the time this script runs from the checkout named by
--checkout (the pinned snapshot the runs ran in); the config hash is the sha256 of
the run's config.json (the resolved config every checkpoint also stores); the warm
start's digest is the sha256 of its latest checkpoint's checksums.sha256 manifest
(mtrl/checksums.py: the digests of every file of the step), so equal digests mean
the same weights.

    python -m tools.run_records --checkout /work/wt-smollm2-run \
        --runs workdir/reproduce/NAME/*/seed* --out experiments/<study>/runs.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import subprocess

SUMMARY_KEYS = ("test_success", "post_sft_test_success", "best_step", "steps", "minutes",
                "last_step", "last_test_success",
                "final_best_success", "test_metrics")


def git(checkout: pathlib.Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(checkout), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def checkout_state(checkout: pathlib.Path) -> dict:
    diff = git(checkout, "diff", "HEAD")
    return {"commit": git(checkout, "rev-parse", "HEAD"), "dirty": bool(diff),
            "diff_sha256": hashlib.sha256(diff.encode()).hexdigest() if diff else None}


def latest_manifest(workdir: pathlib.Path) -> pathlib.Path | None:
    steps = sorted((p for p in (workdir / "checkpoints").glob("*") if p.name.isdigit()),
                   key=lambda p: int(p.name))
    for step in reversed(steps):
        found = sorted(step.rglob("checksums.sha256"))
        if found:
            return found[0]
    return None


def digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_record(workdir: pathlib.Path) -> dict:
    config = json.loads((workdir / "config.json").read_text())
    record = {"workdir": str(workdir),
              "config_sha256": digest(workdir / "config.json"),
              "seed": config.get("seed")}
    init_from = (config.get("train") or {}).get("init_from") or ""
    record["warm_start"] = init_from or None
    if init_from:
        manifest = latest_manifest(pathlib.Path(init_from))
        record["warm_start_manifest_sha256"] = digest(manifest) if manifest else None
    checkpoint = (config.get("model") or {}).get("hf_checkpoint") or ""
    weights = pathlib.Path(checkpoint) / "model.safetensors"
    if checkpoint and weights.exists():  # the weights it started from (an SFT export)
        record["hf_checkpoint"] = checkpoint
        record["hf_checkpoint_weights_sha256"] = digest(weights)
    summary = workdir / "summary.json"
    if summary.exists():
        values = json.loads(summary.read_text())
        record.update({k: values.get(k) for k in SUMMARY_KEYS})
    manifest = latest_manifest(workdir)
    record["latest_manifest_sha256"] = digest(manifest) if manifest else None
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", required=True, help="the checkout the runs ran in")
    parser.add_argument("--runs", nargs="+", required=True, help="run directories")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = {"checkout": checkout_state(pathlib.Path(args.checkout)),
           "runs": [run_record(pathlib.Path(r)) for r in args.runs]}
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["checkout"]), len(out["runs"]), "runs")


if __name__ == "__main__":
    main()
