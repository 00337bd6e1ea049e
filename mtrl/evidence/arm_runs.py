"""Arms of a comparison, run from one shared SFT warm start per seed: the machinery
that tools/compare_methods.py and tools/reproduce.py share.

An arm is a list of `--config.*` overrides ("key=value"). Per seed S the warm start is
one SFT-only run (`train.steps=0`) in <root>/warm_seed<S>, reused once it finished;
every arm of that seed starts from its weights (`train.init_from`), so arms differ by
their overrides alone and SFT is paid once per seed. Every arm runs the same number of
RL steps; `minutes` is each run's budget (warned past by the trainer, never cut). Runs
are `python -m mtrl.train` processes, each in <root>/<arm>/seed<S>; an arm whose config
is rejected is recorded with its one-line error (the others still run).

Reuse never carries a number across code or configs: a finished warm start, and with
`reuse` a finished arm, is reused only when it ran this very command (command.json)
under the current code (provenance.json: commit, dirty flag, digest of the changes;
mtrl/training/run/provenance.py), and an arm only when it started from the warm start
it would start from now (the warm-start digest); anything else is refused in one line.
With reuse, an arm whose command equals a finished run's of another claim or arm (but
for the run's own folder) is that run (`twin_run`; the record says `same_run_as`):
the default's MAGRPO arm, under four claim names, runs once per seed.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import statistics
import subprocess
import sys
import time
from typing import Sequence

from mtrl.evidence.seed_runs import run_curve
from mtrl.training.run.provenance import code_state, read_provenance, same_origin

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Summary keys a run record copies from the trainer's --out (beside test metrics).
SUMMARY_KEYS = ("minutes", "steps", "best_step", "over_budget", "post_sft_test_success",
                "last_step", "last_test_success",
                "post_sft_ood_test_success", "ood_test_success")


@dataclasses.dataclass(frozen=True)
class ArmPlan:
    """What every run of a comparison shares."""

    config: pathlib.Path  # an experiments/configs file
    root: pathlib.Path  # workdirs go here
    steps: int  # RL steps of every arm
    eval_interval: int = 10
    minutes: float = 0.0  # each run's budget (0: none)
    overrides: tuple[str, ...] = ()  # for every run, warm starts included
    dry_run: bool = False  # print the commands, run nothing
    warm_root: pathlib.Path | None = None  # warm starts go here (None: root); claims on
    # one suite with the same overrides share them, SFT being most of a claim's time
    reuse: bool = False  # keep an arm run that finished with this very command
    code: dict = dataclasses.field(default_factory=lambda: code_state())  # the code now

    def __post_init__(self):
        if self.steps < 1 or self.eval_interval < 1:
            raise ValueError(f"steps and eval_interval must be >= 1, got {self.steps}, "
                             f"{self.eval_interval}")


def suite_config(spec: str) -> pathlib.Path:
    """A config name in experiments/configs, or a config file path."""
    path = pathlib.Path(spec)
    if not path.suffix:
        path = ROOT / "experiments" / "configs" / f"{spec}.py"
    if not path.exists():
        raise SystemExit(f"--suite: no config {path}")
    return path.resolve()


def trainer_command(config: pathlib.Path, workdir: pathlib.Path, seed: int,
                    overrides: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "mtrl.train", f"--config={config}", f"--workdir={workdir}",
            f"--out={workdir / 'summary.json'}", f"--config.seed={seed}",
            *(f"--config.{kv}" for kv in overrides)]


def run_process(command: list[str], log: pathlib.Path) -> int:
    """Runs `command` from the checkout's root, stdout and stderr into `log`; the exit
    status. (Tests replace this to stub the trainer.)"""
    with open(log, "w") as out:
        return subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT).returncode


def check_reusable(workdir: pathlib.Path, command: Sequence[str], code: dict,
                   warm_digest: str | None = None) -> None:
    """SystemExit (one line) unless the finished run in `workdir` ran `command` under
    `code` (and, for an arm, from the warm start whose digest is `warm_digest`)."""
    why = why_not_reusable(workdir, command, code, warm_digest)
    if why is not None:
        raise SystemExit(f"{workdir} cannot be reused: {why}; delete it or choose another "
                         "--root")


def why_not_reusable(workdir: pathlib.Path, command: Sequence[str], code: dict,
                     warm_digest: str | None = None) -> str | None:
    """Why the run in `workdir` cannot stand for `command` now (check_reusable), or None."""
    if not finished_with(workdir, command):
        return "it ran another command (or did not finish)"
    recorded = read_provenance(workdir)
    why = same_origin(recorded, {"code": code})
    if why is None and warm_digest is not None and \
            ((recorded or {}).get("warm_start") or {}).get("digest") != warm_digest:
        why = "it started from another warm start"
    return why


def warm_start(plan: ArmPlan, seed: int) -> pathlib.Path:
    """The seed's SFT-only run (reused when it finished with this command under this
    code: check_reusable)."""
    warm_root = plan.warm_root or plan.root
    warm_root.mkdir(parents=True, exist_ok=True)
    workdir = warm_root / f"warm_seed{seed}"
    command = trainer_command(plan.config, workdir, seed, ["train.steps=0", *plan.overrides])
    print(f"[warm {seed}] {' '.join(command)}", flush=True)
    if plan.dry_run:
        return workdir
    if (workdir / "summary.json").exists():
        check_reusable(workdir, command, plan.code)
        print(f"[warm {seed}] reused: same command, same code", flush=True)
        return workdir
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "command.json").write_text(json.dumps(command[1:]))
    log = warm_root / f"warm_seed{seed}.log"
    if run_process(command, log):
        raise RuntimeError(f"warm start of seed {seed} failed: see {log}")
    return workdir


def warm_digest(warm: pathlib.Path) -> str | None:
    """The digest of the weights the warm start in `warm` hands to its arms."""
    return ((read_provenance(warm) or {}).get("warm_start") or {}).get("digest")


def finished_with(workdir: pathlib.Path, command: Sequence[str]) -> bool:
    """Whether `workdir` holds a finished run (summary.json) of exactly `command`'s
    arguments (command.json, written before the run started; the interpreter's path is
    not compared): a stopped comparison then resumes at its first unfinished arm."""
    recorded = workdir / "command.json"
    return ((workdir / "summary.json").exists() and recorded.exists()
            and json.loads(recorded.read_text()) == list(command[1:]))


def per_step(workdir: pathlib.Path) -> dict[str, float | None]:
    """Median step time and mean generated tokens / samples per RL step."""
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    records = [r for r in map(json.loads, filter(None, lines)) if r.get("step", 0) > 0]

    def reduce(fn, key):
        found = [r[key] for r in records if r.get(key) is not None]
        return fn(found) if found else None
    return {"step_time_s": reduce(statistics.median, "step_time_s"),
            "generated_tokens_per_step": reduce(statistics.fmean, "rollout/generated_tokens"),
            "generated_samples_per_step": reduce(statistics.fmean,
                                                 "rollout/generated_samples")}


def run_arm(plan: ArmPlan, arm: str, overrides: Sequence[str], seed: int,
            warm: pathlib.Path) -> dict:
    """One arm of one seed from the seed's warm start: a record with the trainer's
    summary numbers, its test metrics, `validation_success` (the best checkpoint's)
    and per_step's numbers, or `error` (the log's last line) if the run failed. With
    plan.reuse, a run that finished with the same command is read, not run again."""
    workdir = plan.root / arm / f"seed{seed}"
    extra = [f"train.steps={plan.steps}", f"train.eval_interval={plan.eval_interval}",
             f"train.save_interval={plan.eval_interval}", f"train.init_from={warm}",
             f"train.budget_minutes={plan.minutes}", "train.restore=none",
             *plan.overrides, *overrides]
    command = trainer_command(plan.config, workdir, seed, extra)
    print(f"[{arm} {seed}] {' '.join(command)}", flush=True)
    record = {"arm": arm, "seed": seed, "overrides": list(overrides), "workdir": str(workdir)}
    if plan.dry_run:
        return record
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir.parent / f"seed{seed}.log"
    source, twin = workdir, (twin_run(plan.root, workdir, command, seed, plan.code,
                                      warm_digest(warm))
                             if plan.reuse and not finished_with(workdir, command) else None)
    if plan.reuse and finished_with(workdir, command):  # another command: run again
        check_reusable(workdir, command, plan.code, warm_digest(warm))
        print(f"[{arm} {seed}] reused: same command, code and warm start", flush=True)
        record["reused"], code = True, 0
    elif twin is not None:
        print(f"[{arm} {seed}] the same run as {twin}: same command, code and warm start",
              flush=True)
        (workdir / "same_run_as.json").write_text(json.dumps({"workdir": str(twin)}))
        record["reused"], record["same_run_as"], source, code = True, str(twin), twin, 0
    else:
        (workdir / "summary.json").unlink(missing_ok=True)  # never read a stale one
        (workdir / "command.json").write_text(json.dumps(command[1:]))
        started = time.perf_counter()
        code = run_process(command, log)
        record["wall_minutes"] = (time.perf_counter() - started) / 60
    if code:
        tail = log.read_text().strip().splitlines()[-1:]
        record["error"] = tail[0] if tail else f"exit {code}"
        print(f"[{arm} {seed}] failed: {record['error']}", flush=True)
        return record
    summary = json.loads((source / "summary.json").read_text())
    record.update({k: summary.get(k) for k in SUMMARY_KEYS})
    record["validation_success"] = summary.get("final_best_success")
    record.update(summary.get("test_metrics") or {})
    record.update({k: v for k, v in summary.items() if k.startswith("last_")})
    record.update(per_step(source))
    record["provenance"] = summary.get("provenance")
    record.update(run_curve(source))
    return record


def retarget(command: Sequence[str], workdir: pathlib.Path,
             other: pathlib.Path) -> list[str]:
    """`command` as it would read for a run in `other` instead of `workdir` (the
    --workdir and --out arguments name the run's own folder)."""
    return [arg.replace(str(workdir), str(other), 1)
            if arg.startswith(("--workdir=", "--out=")) else arg for arg in command]


def twin_run(root: pathlib.Path, workdir: pathlib.Path, command: Sequence[str],
             seed: int, code: dict, warm: str | None) -> pathlib.Path | None:
    """A finished run of the same seed, under another claim or arm beside `root`
    (<root>/../<claim>/<arm>/seed<S>), whose command is this one but for its own
    folder, made by this code from this warm start (why_not_reusable): identical arms
    of different claims (the default's MAGRPO under four names) then run once. A run
    of other code is no twin (this arm runs)."""
    for candidate in sorted(root.parent.glob(f"*/*/seed{seed}")):
        if candidate != workdir and why_not_reusable(
                candidate, retarget(command, workdir, candidate), code, warm) is None:
            return candidate
    return None
