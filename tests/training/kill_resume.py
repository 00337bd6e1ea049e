"""A tiny trainer run SIGKILLed in the middle and started again, as the exact-resume
tests set it up (test_resume.py: RL checkpoints, test_sft_resume.py: SFT checkpoints):
the configs they write, the trainer command, an uninterrupted run and a killed one.

The uninterrupted run of a config is made once per test session and shared
(tests/conftest.py's `uninterrupted` fixture): RL_RESUME_CONFIG serves test_resume.py
and test_resume_windows.py, SFT_RESUME_CONFIG test_sft_resume.py and
test_interrupts.py, so each pair compares against one reference run instead of two."""

import fcntl
import hashlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from typing import Callable

ROOT = pathlib.Path(__file__).resolve().parents[2]
TIMEOUT_S = 900
# The start of both tests' config file: a one-layer model, few tasks, short completions.
# A test appends its own train and SFT sizes and `return c`.
TINY_CONFIG_HEAD = '''
from mtrl.training.config import base_config

def get_config():
    c = base_config()
    c.model.overrides = dict(num_layers=1, hidden_size=32, intermediate_size=64, num_heads=2,
                             num_kv_heads=1, head_dim=16)
    c.data.num_train = 32
    c.data.num_eval = 2
    c.env.workers = 1
    c.rollout.num_generations = 2
    c.rollout.max_new_tokens = 12
    c.rollout.max_context = 256
'''
# RL checkpoints every step (test_resume.py kills before step 3 is saved), a test split
# (test_resume_windows.py checks the summary's test line).
RL_RESUME_CONFIG = TINY_CONFIG_HEAD + '''    c.train.steps = 5
    c.train.tasks_per_step = 2
    c.train.eval_interval = 2
    c.train.save_interval = 1
    c.sft.steps = 4
    c.sft.batch_size = 4
    c.data.test_split = "test"
    c.data.num_test = 2
    c.data.options = dict(test_terms=("neg2x",), test_offset_range=(0, 9))
    return c
'''
# 40 SFT updates per agent in two phases (1-10, 11-40), SFT checkpoints at 10, 30 and
# 40; no RL checkpoint after step 0 (save_interval > steps: test_interrupts.py's Ctrl-C
# during RL must save where it stops).
SFT_FIRST_PHASE, SFT_STEPS = 10, 40
SFT_RESUME_CONFIG = TINY_CONFIG_HEAD + f'''    c.train.steps = 6
    c.train.tasks_per_step = 2
    c.train.eval_interval = 3
    c.train.save_interval = 10
    c.sft.steps = {SFT_STEPS}
    c.sft.first_phase_steps = {SFT_FIRST_PHASE}
    c.sft.batch_size = 4
    c.sft.checkpoint_every = 20
    return c
'''


def command(config, workdir):
    return [sys.executable, "-m", "mtrl.train", f"--config={config}", f"--workdir={workdir}",
            "--noprogress"]


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's mtrl


def checkpoint_steps(directory: pathlib.Path) -> list[int]:
    """The committed steps in a checkpoint directory (its numbered entries), sorted;
    [] while it does not exist."""
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit()) \
        if directory.exists() else []


def train(config: pathlib.Path, workdir: pathlib.Path, *overrides: str) -> str:
    """The trainer on `config` in `workdir` to its end (resuming what is there);
    returns what it printed (stdout and stderr)."""
    done = run_cli(config, workdir, *overrides)
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


def run_cli(config: pathlib.Path, workdir: pathlib.Path, *overrides: str
            ) -> subprocess.CompletedProcess:
    """The trainer command, whatever its exit status; stderr is merged into stdout."""
    return subprocess.run([*command(config, workdir), *overrides], env=_env(), cwd=ROOT,
                          timeout=TIMEOUT_S, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def stopping_command(config, workdir, signame: str, directory: str, step: int):
    """The trainer command run by tests/training/stop_trainer.py: the process sends
    itself SIG`signame` when it is about to save `step` in workdir/`directory` (every
    earlier save committed), a deterministic point instead of a polling race."""
    return [sys.executable, "-m", "tests.training.stop_trainer", signame, directory,
            str(step), *command(config, workdir)[3:]]


def uninterrupted_run(root: pathlib.Path, config_text: str
                      ) -> tuple[pathlib.Path, pathlib.Path]:
    """`config_text` written to root/<its hash>/small.py and trained to the end in
    root/<hash>/whole, once: under a file lock (pytest-xdist workers share `root`), a
    later call with the same text finds the finished run and returns it. Returns
    (config, whole); the caller must not write into whole."""
    here = root / hashlib.sha256(config_text.encode()).hexdigest()[:16]
    root.mkdir(parents=True, exist_ok=True)
    with open(f"{here}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (here / "finished").exists():
            shutil.rmtree(here, ignore_errors=True)
            here.mkdir()
            (here / "small.py").write_text(config_text)
            train(here / "small.py", here / "whole")
            (here / "finished").touch()
    return here / "small.py", here / "whole"


def whole_and_killed_runs(tmp_path: pathlib.Path, uninterrupted, config_text: str,
                          directory: str, step: int):
    """The session's uninterrupted run of `config_text` (`uninterrupted`: the
    conftest fixture, see uninterrupted_run) and the same config trained again in
    tmp_path/killed, SIGKILLed when it is about to save `step` in its `directory`
    (e.g. "sft_checkpoints"): the updates since the previous checkpoint are done and
    lost.

    Returns (config, whole, killed): the test checks what the kill left, then resumes
    with train(config, killed) and compares with the whole run.
    """
    config, whole = uninterrupted(config_text)
    killed = tmp_path / "killed"
    done = subprocess.run(stopping_command(config, killed, "KILL", directory, step),
                          env=_env(), cwd=ROOT, timeout=TIMEOUT_S, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    assert done.returncode == -signal.SIGKILL, done.stdout[-3000:]
    return config, whole, killed


def stopped_at(config: pathlib.Path, workdir: pathlib.Path, signame: str, directory: str,
               step: int) -> tuple[int, str]:
    """The trainer on `config` in `workdir`, sent SIG`signame` by itself when it is
    about to save `step` in workdir/`directory`; returns its exit status and what it
    printed (stdout and stderr)."""
    done = subprocess.run(stopping_command(config, workdir, signame, directory, step),
                          env=_env(), cwd=ROOT, timeout=TIMEOUT_S, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return done.returncode, done.stdout


def stopped_run(config: pathlib.Path, workdir: pathlib.Path,
                stop_when: Callable[[pathlib.Path], bool], signals: tuple[int, ...],
                poll_s: float = 0.05) -> tuple[int, str]:
    """Starts the trainer on `config` in `workdir` and, as soon as stop_when(workdir)
    holds, sends it `signals` one after another (0.05 s apart); returns its exit
    status and what it printed (stdout and stderr)."""
    log = workdir.parent / f"{workdir.name}.log"
    with open(log, "w") as out:
        victim = subprocess.Popen(command(config, workdir), env=_env(), cwd=ROOT,
                                  stdout=out, stderr=subprocess.STDOUT)
        deadline = time.time() + TIMEOUT_S
        while time.time() < deadline and not stop_when(workdir):
            assert victim.poll() is None, "the run ended before it could be stopped:\n" + \
                log.read_text()[-3000:]
            time.sleep(poll_s)
        for i, signum in enumerate(signals):
            if i:
                time.sleep(0.05)
            victim.send_signal(signum)
        code = victim.wait(timeout=TIMEOUT_S)
    return code, log.read_text()
