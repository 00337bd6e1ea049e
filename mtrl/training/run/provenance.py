"""Where a number came from: the code, the config and the warm start of a run.

Every record a run writes (`--out` summary, test.json, provenance.json) carries

  code          {"commit", "dirty", "diff_sha256"}: the checkout's HEAD, whether the
                files that make a run (CODE_PATHS: the package, the programs under
                experiments/, bench, tools, setup.py; tracked, or untracked
                and not ignored)
                differ from it, and then the SHA-256 of `git diff HEAD --binary` over
                them followed by each untracked file's path and bytes, so two dirty
                trees compare equal only when their changes do. Records (experiments/'s
                JSON and READMEs, bench/records/, docs/, BENCHMARKS.md) are not code: a claim run that writes its
                record leaves the next claim's warm starts reusable. `code_at_start` is the same at the run's step 0 (a run
                resumed under other code has `mixed_code` true).
  config_hash   SHA-256 of the resolved config record (config.json) without the
                fields that only say how long or how often (run_config.RESUMABLE_CHANGES):
                two runs with one hash ran the same experiment.
  warm_start    {"digest", "source"}: SHA-256 over the warm-start parameters of every
                agent (the weights RL started from, after SFT or as loaded from
                train.init_from), and for init_from the source run's own provenance.

Reuse of a finished run (a warm start, an arm of a comparison) compares these, so a
number is never carried over from other code or another config
(mtrl/evidence/arm_runs.py).
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import subprocess
from typing import Any, Mapping, Sequence

import jax
import numpy as np

from mtrl.training.run.run_config import RESUMABLE_CHANGES, flatten_record

PROVENANCE_FILE = "provenance.json"
# git pathspecs: in experiments/ only programs are code (configs, claims, a study's
# probes); its records, READMEs and bench/records/ are not.
CODE_PATHS = ("mtrl", ":(glob)experiments/**/*.py", "bench", "tools",
              ":(exclude,glob)bench/records/**", "setup.py")
_REPO = pathlib.Path(__file__).resolve().parents[3]


def _git(root: pathlib.Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], check=True,
                          capture_output=True).stdout


def code_state(root: str | pathlib.Path | None = None) -> dict[str, Any]:
    """{"commit", "dirty", "diff_sha256"} of the checkout at `root` (default: the one
    this mtrl is imported from); all None outside a git checkout (an installed copy)."""
    root = pathlib.Path(root) if root is not None else _REPO
    try:
        commit = _git(root, "rev-parse", "HEAD").decode().strip()
        diff = _git(root, "diff", "HEAD", "--binary", "--", *CODE_PATHS)
        untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z", "--",
                         *CODE_PATHS)
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None, "diff_sha256": None}
    names = sorted(n for n in untracked.decode().split("\0") if n)
    if not diff and not names:
        return {"commit": commit, "dirty": False, "diff_sha256": None}
    digest = hashlib.sha256(diff)
    for name in names:
        digest.update(b"\0" + name.encode() + b"\0")
        try:
            digest.update((root / name).read_bytes())
        except OSError:  # vanished between the listing and the read
            digest.update(b"<unreadable>")
    return {"commit": commit, "dirty": True, "diff_sha256": digest.hexdigest()}


def config_hash(record: Mapping[str, Any]) -> str:
    """SHA-256 of the config record's fields that shape the experiment (sorted JSON)."""
    fields = {k: v for k, v in flatten_record(dict(record)).items()
              if k not in RESUMABLE_CHANGES}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def params_digest(params: Sequence[Any]) -> str:
    """SHA-256 over every leaf of every agent's parameters (path, dtype, shape, bytes)."""
    digest = hashlib.sha256()
    for agent, tree in enumerate(params):
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            array = np.asarray(jax.device_get(leaf))
            digest.update(f"{agent}/{jax.tree_util.keystr(path)}/{array.dtype}/"
                          f"{array.shape}".encode())
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def read_provenance(workdir: str | pathlib.Path) -> dict | None:
    path = pathlib.Path(workdir) / PROVENANCE_FILE
    return json.loads(path.read_text()) if path.exists() else None


def warm_start_record(params: Sequence[Any], init_from: str) -> dict[str, Any]:
    """The warm start's digest and, for train.init_from, its source run's provenance
    (kept in the checkpoints' extra, so a resumed run reports the same)."""
    source = None
    if init_from:
        source = {"workdir": str(init_from), "provenance": read_provenance(init_from)}
    return {"digest": params_digest(params), "source": source}


def run_provenance(record: Mapping[str, Any], warm_start: Mapping[str, Any] | None,
                   code_at_start: Mapping[str, Any] | None,
                   code: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The provenance block of a run's records (module docstring)."""
    code = dict(code if code is not None else code_state())
    start = dict(code_at_start) if code_at_start else None
    return {"code": code, "code_at_start": start,
            "mixed_code": start is not None and start != code,
            "config_hash": config_hash(record), "warm_start": dict(warm_start or {}) or None}


def write_provenance(workdir: str | pathlib.Path, provenance: Mapping[str, Any]) -> None:
    (pathlib.Path(workdir) / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2))


def same_origin(recorded: Mapping[str, Any] | None, current: Mapping[str, Any]
                ) -> str | None:
    """None when a recorded provenance came from the current code and config hash;
    else the first difference, in words (for a one-line refusal)."""
    if not recorded:
        return "it records no provenance (made before records carried one)"
    if recorded.get("mixed_code"):
        return "it ran under more than one code state (resumed after a change)"
    was, now = recorded.get("code") or {}, current.get("code") or {}
    if now.get("commit") is None:
        return "this checkout is not a git checkout, so its code cannot be compared"
    for key, words in (("commit", "commit"), ("dirty", "dirty flag"),
                       ("diff_sha256", "uncommitted changes")):
        if was.get(key) != now.get(key):
            return f"its {words} differs ({was.get(key)} vs now {now.get(key)})"
    if "config_hash" in current and recorded.get("config_hash") != current["config_hash"]:
        return "its config hash differs (another config)"
    return None
