"""Every `python -m mtrl.train` command in README.md runs, for one short step: the
command as documented plus `--smoke` (mtrl/training/config/smoke.py), so a documented
command that no longer parses, builds or fits fails here, not in a reader's first hour.
Commands that need files made separately (weights: scripts/get_smollm2.py; a
learnable-band task list: scripts/select_learnable_tasks.py) are skipped, saying which
file is missing. A command that runs an experiment config as it is also
gets tests/training/config/test_configs.py's one-step checks (which then skips that config)."""

import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
COMMAND = re.compile(r"python -m mtrl\.train(?:[ \t]+--[^\s`#|]+)*")


def readme_commands() -> list[str]:
    """Each distinct `python -m mtrl.train ...` of README.md (code blocks and inline),
    without trailing comments or --smoke, in order."""
    found = COMMAND.findall((ROOT / "README.md").read_text())
    # An example that already says --smoke is the same run as its command without it.
    return list(dict.fromkeys(" ".join(w for w in command.split() if w != "--smoke")
                              for command in found))


def missing_inputs(args: list[str]) -> str | None:
    """The model checkpoint or the learnable-band task list (data.options
    train_ids_file) the command's config names, when it is not on disk."""
    from mtrl.training.config import module_from_file, resolve_paths
    spec = next((a.split("=", 1)[1] for a in args if a.startswith("--config=")),
                "experiments/configs/default.py")
    path, _, suffix = spec.partition(":")
    config = module_from_file(ROOT / path).get_config(*([suffix] if suffix else []))
    resolve_paths(config, ROOT / path)
    needed = (config.model.hf_checkpoint, config.data.options.get("train_ids_file", ""))
    return next((path for path in needed if path and not os.path.exists(path)), None)


def test_the_readme_has_the_commands_this_test_runs():
    commands = readme_commands()
    assert "python -m mtrl.train" in commands  # the default experiment
    assert len(commands) >= 8, commands


@pytest.mark.parametrize("command", readme_commands())
def test_a_readme_command_runs_one_short_step(command, tmp_path):
    args = shlex.split(command)[3:]
    missing = missing_inputs(args)
    if missing:
        pytest.skip(f"needs {missing} (scripts/get_smollm2.py, then "
                    "scripts/select_learnable_tasks.py; README 'Real models')")
    workdir, summary = tmp_path / "run", tmp_path / "summary.json"
    done = subprocess.run([sys.executable, "-m", "mtrl.train", *args, "--smoke",
                           f"--workdir={workdir}", f"--out={summary}", "--noprogress"],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Run finished: 1 steps" in done.stdout, done.stdout[-3000:]
    # A config that this command runs as it is is not run again by test_configs.py's
    # one-step test: that test's checks of the run's files apply here.
    from tests.training.config.test_configs import check_one_step_run, readme_covered
    stem = {c: s for s, c in readme_covered().items()}.get(command)
    if stem:
        from mtrl.training.config import module_from_file
        config = module_from_file(ROOT / "experiments" / "configs" / f"{stem}.py").get_config()
        check_one_step_run(workdir, json.loads(summary.read_text()), config, stem)
