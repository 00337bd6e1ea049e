"""One training step of experiments/configs/textworld.py, shrunk: SFT on walkthroughs,
a GiGPO step whose anchor ids come from the games, held-out and test evaluation,
transcripts a person can read."""

import json
import pathlib

from mtrl.training.config import module_from_file
from mtrl.training.loop.trainer import Trainer

CONFIG = pathlib.Path(__file__).resolve().parents[3] / "experiments" / "configs" / "textworld.py"


def test_one_step_of_the_textworld_config(tmp_path):
    c = module_from_file(CONFIG).get_config()
    assert c.credit.estimator == "gigpo" and c.env.name == "textworld"
    c.model.overrides = dict(num_layers=1, hidden_size=32, intermediate_size=64, num_heads=2,
                             num_kv_heads=1, head_dim=16)
    c.data.num_train, c.data.num_eval, c.data.num_test = 2, 2, 2
    c.sft.steps, c.sft.batch_size = 2, 4
    c.train.steps, c.train.tasks_per_step, c.train.eval_interval = 1, 2, 1
    c.train.drop_zero_advantage = False  # a random model's step may have no signal to keep
    c.rollout.num_generations = 2
    trainer = Trainer(c, tmp_path, show_progress=False)
    try:
        result = trainer.run()
    finally:
        trainer.close()
    assert result["steps"] == 1 and 0.0 <= result["test_success"] <= 1.0
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    step = records[-1]
    assert step["step"] == 1 and step["rollout/turn1_nodes"] == 2.0
    assert step["rollout/turn2_nodes"] == 4.0  # every joint action expanded (T = 2)
    text = "\n".join(p.read_text() for p in (tmp_path / "transcripts").iterdir())
    assert "Goal: " in text and "--- turn 2" in text
