"""Every `python -m mtrl.train` command in README.md runs, for one short step, the way
a reader runs them: in the order written, from one folder, each with its default
workdir (or the --workdir the README gives it), as documented plus `--smoke`
(mtrl/training/config/smoke.py). So a documented command that no longer parses, builds
or fits fails here, and so does one that would reuse an earlier command's workdir (a
config-change refusal). Commands of one config file run in order in one test (only
they can share a default workdir: mtrl/train.py's default_workdir carries the config's
name and argument); different config files run in parallel, and no two commands'
workdirs are the same. Each smoke run must run its RL update (the summary's
"RL updates: 1 ran"). Commands that need files made separately (weights:
`python -m tools.get_smollm2`; a learnable-band task list:
`python -m tools.select_learnable_tasks`)
are skipped, saying which file is missing. A command that runs an experiment config as
it is also gets tests/training/config/test_configs.py's one-step checks (which then
skips that config). Each command's time is printed (`-s`): README's smoke times are
these."""

import contextlib
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

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


def config_spec(args: list[str]) -> str:
    """The --config value of a command (the default config when it names none)."""
    return next((a.split("=", 1)[1] for a in args if a.startswith("--config=")),
                "experiments/configs/default.py")


def workdir_of(args: list[str]) -> str:
    """Where the command's smoke run writes: its --workdir, else the default."""
    from mtrl.train import default_workdir
    given = next((a.split("=", 1)[1] for a in args if a.startswith("--workdir=")), None)
    return given + "-smoke" if given else default_workdir(config_spec(args), smoke=True)


def by_config_file() -> dict[str, list[str]]:
    """README commands grouped by config file, each group in README order."""
    groups: dict[str, list[str]] = {}
    for command in readme_commands():
        file = config_spec(shlex.split(command)[3:]).partition(":")[0]
        groups.setdefault(pathlib.Path(file).stem, []).append(command)
    return groups


def test_no_two_readme_commands_share_a_workdir():
    workdirs = [workdir_of(shlex.split(c)[3:]) for c in readme_commands()]
    assert len(set(workdirs)) == len(workdirs), workdirs
    assert "workdir/tool-mbpp-smoke" in workdirs  # the config's argument is in the name


@pytest.fixture(scope="module")
def reader_folder(tmp_path_factory):
    """A folder laid out like the checkout for the README's relative paths
    (experiments/), where the runs' default workdirs land."""
    folder = tmp_path_factory.mktemp("reader")
    (folder / "experiments").symlink_to(ROOT / "experiments")
    return folder


SERVE = re.compile(r"python -m mtrl\.serve_openenv(?:[ \t]+--[^\s`#|&]+)*")


@contextlib.contextmanager
def servers_for(config: str):
    """The environment the config's commands need: for openenv.py, README's OpenEnv
    server command (on a free port; MTRL_OPENENV_URL points there); else nothing."""
    if config != "openenv":
        yield {}
        return
    from tests.envs.openenv.servers import free_port, serving
    command = SERVE.findall((ROOT / "README.md").read_text())[0]  # the section's, in order
    port = free_port()
    args = [a for a in shlex.split(command)[1:] if not a.startswith("--port=")]
    with serving([*args, f"--port={port}"], port) as (url, _):
        yield {"MTRL_OPENENV_URL": url}


@pytest.mark.parametrize("config", list(by_config_file()))
def test_readme_commands_run_in_order_with_default_workdirs(config, reader_folder):
    with servers_for(config) as env:
        run_in_order(config, reader_folder, env)


def run_in_order(config: str, reader_folder: pathlib.Path, env: dict) -> None:
    ran = 0
    for command in by_config_file()[config]:
        args = shlex.split(command)[3:]
        missing = missing_inputs(args)
        if missing:
            print(f"skipped {command!r}: needs {missing}")
            continue
        summary = reader_folder / f"summary-{ran}-{config}.json"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "mtrl.train", *args, "--smoke",
                               f"--out={summary}", "--noprogress"],
                              cwd=reader_folder,
                              env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=900)
        print(f"{command} --smoke: {time.perf_counter() - started:.0f} s")
        assert done.returncode == 0, done.stdout[-3000:]
        assert "Run finished: 1 steps" in done.stdout, done.stdout[-3000:]
        assert "RL updates: 1 ran, 0 skipped" in done.stdout, done.stdout[-3000:]
        workdir = reader_folder / workdir_of(args)
        result = json.loads(summary.read_text())
        assert (workdir / "metrics.jsonl").exists() and result["updates_run"] == 1
        ran += 1
        # A config that this command runs as it is is not run again by test_configs.py's
        # one-step test: that test's checks of the run's files apply here.
        from tests.training.config.test_configs import check_one_step_run, readme_covered
        stem = {c: s for s, c in readme_covered().items()}.get(command)
        if stem:
            from mtrl.training.config import module_from_file
            config_file = ROOT / "experiments" / "configs" / f"{stem}.py"
            check_one_step_run(workdir, result, module_from_file(config_file).get_config(),
                               stem)
    if not ran:
        pytest.skip(f"every {config}.py command needs a file made first (python -m "
                    "tools.get_smollm2, then python -m tools.select_learnable_tasks; "
                    "README 'Real models')")
