"""One RL step of `experiments/configs/tool.py` (shrunk: tests/envs/math/smoke.py) runs
in process through the trainer with its defaults: the reward recipe, SimpleTIR's
void-turn filter and the real sandbox; transcripts land in the workdir."""

from mtrl.training.trainer import Trainer
from tests.envs.math.smoke import load_config, minimal, step_records


def test_one_step_of_the_tool_config(tmp_path):
    c = minimal("tool")
    trainer = Trainer(c, tmp_path, show_progress=False)
    try:
        assert trainer.c.recipe is not None and trainer.c.filters.void_turns
        result = trainer.run()
    finally:
        trainer.close()
    assert result["steps"] == 1
    step = step_records(tmp_path)
    assert step and step[0].get("finite", 1.0) == 1.0
    # An untrained model fails every episode: the recipe's failure reward.
    assert step[0]["reward_mean"] < 0
    transcript = (tmp_path / "transcripts" / "heldout_step00000001.txt").read_text()
    assert "--- observation ---" in transcript and "```python" in transcript


def test_the_mbpp_variant_loads():
    c = load_config("tool", "mbpp")
    assert c.data.name == "mbpp_sanitized" and c.env.name == "tool"
