"""`python -m mtrl.train` that signals itself at a chosen checkpoint save: a kill or
stop at a known point instead of a race between a polling test and the run.

    python -m tests.training.stop_trainer SIGNAL DIRECTORY STEP [mtrl.train flags]

SIGNAL is KILL, TERM or INT; DIRECTORY a checkpoint directory's name in the workdir
("sft_checkpoints" or "checkpoints"); STEP a step number. DIRECTORY "evaluation"
signals as the validation evaluation of RL step STEP starts, "final-test" as the
final test starts (STEP unused): the stop then lands inside an evaluation. When the trainer asks to
save STEP there, every earlier save is first waited for (so each is committed, as a
poller that saw it on disk would have found it) and then the process sends SIGNAL to
itself, a real signal through the trainer's own handlers, before STEP is written:
with KILL the run dies holding every update since the previous checkpoint unsaved;
with TERM or INT the stop request is recorded and the trainer stops at its next safe
point, as it would with a signal from outside.
"""

import os
import signal
import sys

from mtrl.training.checkpoints.checkpointing import CheckpointKeeper


def stop_at(signum: int, directory: str, step: int) -> None:
    """Patches CheckpointKeeper.save to send `signum` once, at `step` of `directory`."""
    save = CheckpointKeeper.save
    sent = []

    def save_or_signal(self, at, *args, **kwargs):
        if not sent and int(at) == step and self.directory.name == directory:
            sent.append(at)
            self.wait()  # the earlier checkpoints are on disk, whole
            os.kill(os.getpid(), signum)
        return save(self, at, *args, **kwargs)

    CheckpointKeeper.save = save_or_signal


def stop_in_evaluation(signum: int, where: str, step: int) -> None:
    """Patches the Trainer to send `signum` once, as the validation evaluation of RL
    step `step` starts (where="evaluation") or as the final test starts ("final-test")."""
    from mtrl.training.loop.trainer import Trainer
    evaluate, test, sent = Trainer.evaluate, Trainer.test, []

    def signal_once():
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signum)

    def evaluate_after_signal(self, at, split="validation"):
        if where == "evaluation" and split == "validation" and int(at) == step:
            signal_once()
        return evaluate(self, at, split)

    def test_after_signal(self, at, *args, **kwargs):
        if where == "final-test":
            signal_once()
        return test(self, at, *args, **kwargs)

    Trainer.evaluate, Trainer.test = evaluate_after_signal, test_after_signal


if __name__ == "__main__":
    name, directory, step = sys.argv[1:4]
    if directory in ("evaluation", "final-test"):
        stop_in_evaluation(getattr(signal, f"SIG{name}"), directory, int(step))
    else:
        stop_at(getattr(signal, f"SIG{name}"), directory, int(step))
    sys.argv = ["mtrl.train", *sys.argv[4:]]
    from mtrl import train
    train.run()
