"""The `lora` section: parsed into a LoRAConfig (rank 0: full fine-tuning), bad values
refused in one line before any work, a run recorded before the section existed still
resumes, and train.init_from refuses a source that trained something else."""

import pytest

from mtrl.models.lora import LoRAConfig
from mtrl.training.config import base_config, config_record, parse
from mtrl.training.config.migrate import normalize
from mtrl.training.run.run_config import differences
from mtrl.training.sft.warm_start import check_same_adapters


def test_default_is_full_fine_tuning_and_fields_parse(no_work):
    assert parse(base_config()).lora == LoRAConfig()
    c = base_config()
    c.lora.rank, c.lora.alpha, c.lora.targets = 8, 32.0, "attention"
    run = parse(c)
    assert run.lora == LoRAConfig(rank=8, alpha=32.0, targets=("q_proj", "k_proj", "v_proj",
                                                               "o_proj"))
    assert run.lora.scale == 4.0 and run.record["lora"]["targets"] == "attention"


@pytest.mark.parametrize("field, value, message", [
    ("rank", -2, r"^config\.lora\.rank: must be an int >= 0"),
    ("alpha", 0.0, r"^config\.lora\.alpha: must be a finite number > 0"),
    ("targets", "q_proj,qkv", r"^config\.lora\.targets: unknown 'qkv'"),
    ("ranks", 4, r"^config\.lora\.ranks: no such field; valid: alpha, rank, targets"),
])
def test_bad_lora_fields_fail_in_one_line(no_work, field, value, message):
    c = base_config()
    c.lora[field] = value
    with pytest.raises(ValueError, match=message) as error:
        parse(c)
    assert "\n" not in str(error.value)


def test_a_run_recorded_before_the_section_existed_still_resumes():
    saved = config_record(base_config())
    del saved["lora"]  # config.json of a run from before LoRA
    del saved["train"]["eval_turns"]  # ... and before train.eval_turns
    assert differences(normalize(saved), normalize(config_record(base_config()))) == []
    c = base_config()
    c.lora.rank = 4  # ... but turning LoRA on is a different experiment
    assert differences(normalize(saved), normalize(config_record(c))) == [("lora.rank", 0, 4)]


def test_init_from_needs_a_source_that_trained_the_same_parameters():
    full = config_record(base_config())
    check_same_adapters(full, None, "src")  # full fine-tuning from full fine-tuning
    lora = LoRAConfig(rank=4, targets="mlp")
    with pytest.raises(ValueError, match=r"^config\.train\.init_from: the run in src trained "
                       r"the whole model \(lora.rank=0\); this run trains adapters of rank 4"):
        check_same_adapters(full, lora, "src")
    source = dict(full, lora=dict(rank=4, alpha=1.0, targets="gate_proj,up_proj,down_proj"))
    check_same_adapters(source, lora, "src")  # alpha only scales: the same tensors
    with pytest.raises(ValueError, match="rank 8 on gate_proj"):
        check_same_adapters(dict(full, lora=dict(rank=8, targets="mlp")), lora, "src")
