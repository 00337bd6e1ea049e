"""One RL step of `experiments/configs/tool.py` (shrunk: tests/envs/math/smoke.py) runs
in process through the trainer with its defaults: the reward recipe, SimpleTIR's
void-turn filter and the real sandbox; transcripts land in the workdir. The same run
logs to Weights & Biases (offline: the run file is read back) beside metrics.jsonl."""

from mtrl.training.logging import read_metrics
from mtrl.training.loop.trainer import Trainer
from tests.envs.math.smoke import load_config, minimal, step_records
from tests.training.wandb_records import history_rows


def test_one_step_of_the_tool_config(tmp_path, monkeypatch):
    for name, value in (("WANDB_MODE", "offline"), ("WANDB_SILENT", "true"),
                        ("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))):
        monkeypatch.setenv(name, value)
    c = minimal("tool")
    c.train.wandb_project = "mtrl-test"
    trainer = Trainer(c, tmp_path, show_progress=False)
    try:
        assert trainer.run_config.reward is not None and trainer.run_config.filters.void_turns
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
    [run_file] = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    logged = {row["step"]: row for row in history_rows(run_file) if "step" in row}
    for row in read_metrics(tmp_path):  # every step's line, with the same values
        assert {k: v for k, v in row.items() if v is not None}.items() <= logged[row["step"]].items()


def test_the_mbpp_variant_loads():
    c = load_config("tool", "mbpp")
    assert c.data.name == "mbpp_sanitized" and c.env.name == "tool"
