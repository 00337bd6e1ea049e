"""experiments/configs/smollm2_guess.py trains: one `--smoke` step of its suite,
environment and method (SFT on the binary-search teacher's rows, an RL step over six
turns whose update runs, validation and test with the feedback gain) on the tiny
byte-level model in place of SmolLM2 (no checkpoint or chat template needed)."""

import json

from mtrl.sampling import BucketPolicy
from mtrl.training.config import apply_smoke, module_from_file
from mtrl.training.config.smoke import SAMPLER_BUCKETS
from mtrl.training.loop.trainer import Trainer
from tests.conftest import ROOT


def test_one_smoke_step_of_the_guess_config_on_the_byte_model(tmp_path):
    c = module_from_file(ROOT / "experiments" / "configs" / "smollm2_guess.py").get_config()
    c.model.preset, c.model.hf_checkpoint = "tiny", ""
    c.model.overrides = dict(num_layers=1, hidden_size=32, intermediate_size=64,
                             num_heads=2, num_kv_heads=1, head_dim=16)
    c.tokenizer = "byte"
    c.chat.system_prompts = ()  # the byte tokenizer has no chat template
    c.rollout.max_context = 1024  # six turns of ~90 bytes
    c.sft.max_len = 768
    apply_smoke(c)
    trainer = Trainer(c, tmp_path, show_progress=False,
                      sampler_buckets=BucketPolicy(**SAMPLER_BUCKETS))
    try:
        assert trainer.run_config.rollout.num_turns == 6
        result = trainer.run()
    finally:
        trainer.close()
    assert result["steps"] == 1 and result["updates_run"] == 1
    assert result["test_success"] is not None
    assert (tmp_path / "sft.jsonl").exists()  # SFT on the teacher's rows
    test = json.loads((tmp_path / "test.json").read_text())
    assert "test_success_turn6" in json.dumps(test)
    transcript = next(tmp_path.glob("transcripts/*test*")).read_text()
    assert "Guess my secret integer. It is greater than" in transcript
