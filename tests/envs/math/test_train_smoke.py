"""One RL step of `experiments/configs/math.py` (shrunk: tests/envs/math/smoke.py) runs
in process through the trainer, and writes readable transcripts to the workdir. It
trains with IGPO (`--config.credit.estimator=igpo`): the math environment reports
only the truth, so the step fails unless the trainer scores it (answer_probs.py);
the config's own UFO runs in the method smoke table (bench/envs.py)."""

from mtrl.training.loop.trainer import Trainer
from tests.envs.math.smoke import minimal, step_records


def test_one_step_of_the_math_config(tmp_path):
    c = minimal("math")
    assert c.credit.estimator == "ufo"
    c.credit.estimator = "igpo"
    c.filters.void_turns = True
    trainer = Trainer(c, tmp_path, show_progress=False)
    try:
        assert trainer.scores_answers
        result = trainer.run()
    finally:
        trainer.close()
    assert result["steps"] == 1
    step = step_records(tmp_path)
    assert step and step[0].get("finite", 1.0) == 1.0
    transcript = (tmp_path / "transcripts" / "heldout_step00000001.txt").read_text()
    assert "--- task prompt ---" in transcript and "--- turn 1 (agent 0" in transcript
