"""Ctrl-C and SIGTERM with real signals on a real trainer process: the run stops at a
safe point with one line and a non-zero status, a second Ctrl-C exits at once, and the
same command resumes each time (past a corrupt checkpoint too) to the uninterrupted
run's exact metrics. The SIGTERM during SFT is sent by the trainer process to itself
at a known SFT update (tests/training/stop_trainer.py), so the stop lands in SFT
without a race against a short SFT; the Ctrl-Cs come from outside."""

import json
import signal

from tests.training.kill_resume import (SFT_FIRST_PHASE, SFT_RESUME_CONFIG, SFT_STEPS,
                                        stopped_at, stopped_run, train)
from tests.training.loop.test_resume import records
from tests.training.checkpoints.test_verified_checkpoints import corrupt_largest_file


def lines(path):
    return path.read_text().splitlines() if path.exists() else []


def rl_step_logged(step):
    return lambda workdir: any(json.loads(line)["step"] >= step
                               for line in lines(workdir / "metrics.jsonl"))


def check_one_line_stop(code, printed, signum, where):
    assert code == 128 + signum, printed[-3000:]
    assert "Traceback" not in printed and "KeyboardInterrupt" not in printed, printed[-3000:]
    last = printed.strip().splitlines()[-1]
    assert last.startswith(f"interrupted at {where}"), last
    assert last.endswith("; run the same command to resume"), last
    return last


def test_interrupts_stop_with_one_line_and_the_same_command_resumes(tmp_path, uninterrupted):
    # The uninterrupted run is the session's (shared with test_sft_resume.py).
    config, whole = uninterrupted(SFT_RESUME_CONFIG)
    stopped = tmp_path / "stopped"

    # SIGTERM during SFT (40 updates per agent: phase 0 1-10, phase 1 11-40; checkpoints
    # at 10, 30, 40), sent as agent 0 saves update 30: the run stops at the next safe
    # point, after update 31, and saves it.
    code, printed = stopped_at(config, stopped, "TERM", "sft_checkpoints", 30)
    last = check_one_line_stop(code, printed, signal.SIGTERM, "SFT update ")
    update, agent = (int(word) for word in
                     last.split("SFT update ")[1].split(";")[0].split(" of agent "))
    assert (update, agent) == (31, 0), last
    # Saved where it stopped (checkpoint numbers count agents: agent·40 + update).
    assert (stopped / "sft_checkpoints" / str(agent * SFT_STEPS + update)).is_dir(), last
    assert not (stopped / "checkpoints").exists() or not any(
        p.name.isdigit() for p in (stopped / "checkpoints").iterdir())

    # Ctrl-C during RL, before its first RL checkpoint (save_interval 10 > steps 6).
    code, printed = stopped_run(config, stopped, rl_step_logged(1), (signal.SIGINT,))
    # Updates within phase 1 count from its start (update 31 is its 21st).
    assert (f"resuming SFT of agent {agent} from phase 1 update {update - SFT_FIRST_PHASE}"
            in printed), printed[-3000:]
    last = check_one_line_stop(code, printed, signal.SIGINT, "RL step ")
    step = int(last.split("RL step ")[1].split(";")[0])
    assert 1 <= step < 6 and (stopped / "checkpoints" / str(step)).is_dir(), last

    # A corrupt latest checkpoint: refused, set aside, the previous whole one (step 0)
    # used; then Ctrl-C twice exits at once, whatever the run was doing.
    corrupt_largest_file(stopped / "checkpoints" / str(step))
    code, printed = stopped_run(config, stopped, rl_step_logged(min(step + 1, 5)),
                                (signal.SIGINT, signal.SIGINT))
    assert f"checkpoint step {step} is corrupt" in printed, printed[-3000:]
    assert "falling back to step 0" in printed and "resuming from RL step 0" in printed
    assert code == 128 + signal.SIGINT, printed[-3000:]
    assert "Traceback" not in printed, printed[-3000:]

    train(config, stopped)
    assert lines(stopped / "sft.jsonl") == lines(whole / "sft.jsonl")
    assert records(stopped) == records(whole)
