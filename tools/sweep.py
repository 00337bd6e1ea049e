"""Sweep `python -m mtrl.train` over config overrides: a grid or a list of runs, each
in its own workdir, then one table of the runs' summaries.

    # grid: the Cartesian product of every --grid axis (here 2 x 3 = 6 runs)
    python -m tools.sweep --root /tmp/sweep --grid optim.learning_rate=1e-4,3e-4 \\
        --grid seed=0,1,2 -- --config.train.steps=50
    # list: one run per --run, overrides separated by ';'
    python -m tools.sweep --root /tmp/sweep --run "loss.kl_coef=0.0" \\
        --run "loss.kl_coef=0.1;train.ppo_epochs=2"
    # on GPU hosts or a TPU slice: each run is wrapped by tools/launch.py
    python -m tools.sweep ... --launcher tpu --launcher-args="--name mtrl --zone Z \\
        --accelerator v5litepod-16 --no-create"
    ... --dry-run          # print the exact commands, run nothing
    ... --summarize        # only collect the finished runs' summaries into the table

Run r's workdir is <root>/<name>, name = its overrides joined ("optim.learning_rate=
0.0003,seed=1"); its summary is <root>/<name>/summary.json (mtrl.train --out).
Arguments after `--` go to every run. Runs go one after another (each one takes the
whole machine or slice); a failed run is recorded and the sweep goes on. The table
(markdown) and all summaries (JSON) are written to <root>/sweep.md, <root>/sweep.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import pathlib
import re
import shlex
import subprocess
import sys
from typing import Sequence

from tools import launch

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Summary fields shown in the table (mtrl.train --out), when a run reports them.
COLUMNS = ("minutes", "post_sft_success", "final_best_success", "best_step", "test_success")


def parse_override(text: str) -> tuple[str, str]:
    """"a.b=value" -> ("a.b", "value"); one-line error otherwise."""
    key, sep, value = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_][\w.]*", key.strip()):
        raise ValueError(f"override {text!r} is not field.path=value")
    return key.strip(), value.strip()


def expand(grid: Sequence[str], runs: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Override lists of every run: the grid's product, then the listed runs."""
    out: list[list[tuple[str, str]]] = []
    axes = []
    for axis in grid:
        key, values = parse_override(axis)
        choices = [v for v in values.split(",") if v != ""]
        if not choices:
            raise ValueError(f"--grid {axis!r}: no values")
        axes.append([(key, v) for v in choices])
    if axes:
        out.extend(list(combo) for combo in itertools.product(*axes))
    for run in runs:
        out.append([parse_override(part) for part in run.split(";") if part.strip()])
    if not out:
        raise ValueError("nothing to run: give --grid and/or --run")
    names = [run_name(o) for o in out]
    if len(set(names)) != len(names):
        raise ValueError("two runs have the same overrides")
    return out


def run_name(overrides: Sequence[tuple[str, str]]) -> str:
    name = ",".join(f"{k}={v}" for k, v in overrides) or "base"
    return re.sub(r"[^\w.,=+-]", "_", name)


def run_extra(overrides: Sequence[tuple[str, str]], extra: Sequence[str], summary: str
              ) -> list[str]:
    return [*extra, *(f"--config.{k}={v}" for k, v in overrides), f"--out={summary}"]


def commands(args: argparse.Namespace, extra: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(run name, shell commands) per run."""
    out = []
    for overrides in expand(args.grid, args.run):
        name = run_name(overrides)
        workdir = f"{args.root}/{name}"
        more = run_extra(overrides, extra, f"{workdir}/summary.json")
        if args.launcher == "local":
            cmds = [f"{shlex.quote(sys.executable)} -m mtrl.train --config={args.config} "
                    f"--workdir={shlex.quote(workdir)} --progress=false "
                    + " ".join(shlex.quote(a) for a in more)]
        else:
            launch_args, _ = launch.parse([args.launcher, *shlex.split(args.launcher_args),
                                           "--config", args.config, "--workdir", workdir])
            cmds = launch.commands(launch_args, more)
        out.append((name, cmds))
    return out


def table(rows: list[dict]) -> str:
    head = ["run", *COLUMNS, "error"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows:
        cells = [row["run"]]
        for column in COLUMNS:
            value = row.get(column)
            cells.append("" if value is None else
                         f"{value:.3f}" if isinstance(value, float) else str(value))
        cells.append(row.get("error", ""))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def collect(root: pathlib.Path, names: Sequence[str], errors: dict[str, str]) -> list[dict]:
    rows = []
    for name in names:
        path = root / name / "summary.json"
        row = {"run": name}
        if path.exists():
            row.update(json.loads(path.read_text()))
        else:
            row["error"] = errors.get(name, "no summary.json")
        rows.append(row)
    return rows


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    argv = list(argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True, help="parent of the runs' workdirs")
    parser.add_argument("--config", default="experiments/configs/default.py")
    parser.add_argument("--grid", action="append", default=[],
                        help="field=v1,v2,...: one axis of the grid")
    parser.add_argument("--run", action="append", default=[],
                        help="'field=v;field=v': one listed run")
    parser.add_argument("--launcher", choices=("local", "gpu", "tpu"), default="local")
    parser.add_argument("--launcher-args", default="",
                        help="tools/launch.py arguments of the target (quoted)")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--summarize", action="store_true")
    return parser.parse_args(own), extra


def main(argv: Sequence[str] | None = None) -> int:
    args, extra = parse(sys.argv[1:] if argv is None else argv)
    try:
        planned = commands(args, extra)
    except (ValueError, SystemExit) as e:
        sys.exit(f"error: {e}")
    if args.dry_run:
        for name, cmds in planned:
            for cmd in cmds:
                print(f"[{name}] {cmd}")
        return 0
    root = pathlib.Path(args.root)
    errors: dict[str, str] = {}
    if not args.summarize:
        for name, cmds in planned:
            (root / name).mkdir(parents=True, exist_ok=True)
            with open(root / name / "sweep.log", "w") as log:
                code = launch.run_commands(args.launcher, cmds, cwd=ROOT, stdout=log,
                                           stderr=subprocess.STDOUT)
            if code:
                lines = (root / name / "sweep.log").read_text().strip().splitlines()
                errors[name] = f"exit {code}: {(lines or ['(no output)'])[-1][:200]}"
    rows = collect(root, [name for name, _ in planned], errors)
    root.mkdir(parents=True, exist_ok=True)
    (root / "sweep.json").write_text(json.dumps(rows, indent=2))
    text = table(rows)
    (root / "sweep.md").write_text(text + "\n")
    print(text)
    return 1 if any("error" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
