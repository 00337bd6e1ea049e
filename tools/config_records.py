"""Every experiment config's record (what a run's config.json holds), one JSON, so that a
refactor can show it changed no experiment: run it at two commits and compare.

    python -m tools.config_records --out /tmp/after.json
    python -m tools.config_records --out /tmp/before.json --root /tmp/old-checkout
    python -m tools.config_records --compare /tmp/before.json /tmp/after.json
    python -m tools.config_records --compare /tmp/before.json /tmp/after.json --normalize

Each experiments/configs/*.py is loaded from --root (tool.py also with each suite it
takes) and its ConfigDict turned into the record `config_record` writes; paths inside
the checkout are written as <ROOT>, so two checkouts compare. --root may be an older
commit's checkout: its records are made in a child process that imports that checkout's
mtrl (PYTHONPATH), and the record function is looked up where that commit kept it.
--compare prints every field that differs, per config, and exits 1 when any does;
with --normalize both records are first read in today's layout
(mtrl/training/config/migrate.py normalize, what a resume compares), so a layout
change that keeps every setting shows no difference.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Configs whose get_config takes an argument: the values to record besides the
# default (tool.py's default suite is gsm8k).
VARIANTS = {"tool.py": ("mbpp",)}


def record_function(root: pathlib.Path):
    """The imported mtrl's config_record (it moved from training/run_config.py into the
    config package)."""
    for module in ("mtrl.training.config", "mtrl.training.run_config"):
        try:
            return importlib.import_module(module).config_record
        except (ImportError, AttributeError):
            continue
    raise SystemExit(f"error: no config_record in {root}/mtrl")


def records_of_checkout(root: pathlib.Path) -> dict[str, dict]:
    """records(root) of another checkout, made by this file in a child process whose
    import path starts with this folder, then `root` (so `root`'s mtrl is the one loaded,
    not this checkout's)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    child = subprocess.run([sys.executable, __file__, "--root", str(root), "--print-records"],
                           env=env, capture_output=True, text=True)
    if child.returncode:
        raise SystemExit(child.stderr.strip().splitlines()[-1] if child.stderr.strip()
                         else f"error: records of {root}: exit {child.returncode}")
    return json.loads(child.stdout)


def load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"config_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def records(root: pathlib.Path) -> dict[str, dict]:
    """{"<file>[:<argument>]": record} for every experiment config under `root`."""
    if root.resolve() != ROOT:
        return records_of_checkout(root.resolve())
    return _records(root, record_function(root))


def _records(root: pathlib.Path, config_record) -> dict[str, dict]:
    out = {}
    for path in sorted((root / "experiments" / "configs").glob("*.py")):
        module = load(path)
        for argument in (None, *VARIANTS.get(path.name, ())):
            config = module.get_config() if argument is None else module.get_config(argument)
            name = path.name + ("" if argument is None else f":{argument}")
            text = json.dumps(config_record(config), default=str, sort_keys=True)
            out[name] = json.loads(text.replace(str(root), "<ROOT>"))
    return out


def differences(before: dict, after: dict, normalize=None) -> list[str]:
    """One line per config added or removed and per field that differs (unlike the
    resume check, run_config.differences, no field is exempt)."""
    from mtrl.training.run.run_config import flatten_record
    lines = []
    for name in sorted(set(before) | set(after)):
        if name not in after or name not in before:
            lines.append(f"{name}: {'removed' if name not in after else 'added'}")
            continue
        old, new = before[name], after[name]
        if normalize is not None:
            old, new = normalize(old), normalize(new)
        old, new = flatten_record(old), flatten_record(new)
        for field in sorted(set(old) | set(new)):
            if old.get(field, "<absent>") != new.get(field, "<absent>"):
                lines.append(f"{name} {field}: {old.get(field, '<absent>')!r} -> "
                             f"{new.get(field, '<absent>')!r}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(ROOT), help="the checkout to read")
    parser.add_argument("--out", help="where to write the records")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--normalize", action="store_true",
                        help="compare both records in today's layout (what a resume does)")
    parser.add_argument("--print-records", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.print_records:  # records_of_checkout's child: the imported mtrl is --root's
        root = pathlib.Path(args.root).resolve()
        print(json.dumps(_records(root, record_function(root))))
        return 0
    if args.compare:
        before, after = (json.loads(pathlib.Path(p).read_text()) for p in args.compare)
        normalize = None
        if args.normalize:
            from mtrl.training.config.migrate import normalize
        lines = differences(before, after, normalize)
        print("\n".join(lines) if lines else f"no differences ({len(after)} configs)")
        return 1 if lines else 0
    if not args.out:
        parser.error("--out or --compare is required")
    found = records(pathlib.Path(args.root).resolve())
    pathlib.Path(args.out).write_text(json.dumps(found, indent=1, sort_keys=True))
    print(f"wrote {len(found)} config records to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
