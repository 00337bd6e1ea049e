"""`--smoke` (mtrl/training/config/smoke.py): caps lower the fields they name, a
field set on the command line keeps its value, and nothing else moves."""

from mtrl.training.config import apply_smoke, base_config
from mtrl.training.config.smoke import CAPS, SETS


def test_caps_lower_what_exceeds_them_and_report_it():
    c = base_config()
    c.sft.steps, c.sft.batch_size, c.rollout.num_generations = 400, 32, 4
    changed = apply_smoke(c)
    assert (c.sft.steps, c.sft.batch_size, c.rollout.num_generations) == (4, 2, 2)
    assert changed["sft.steps"] == 4 and changed["sft.batch_size"] == 2
    for (section, field), cap in CAPS.items():
        assert c[section][field] <= cap, (section, field)


def test_values_under_a_cap_and_other_fields_stay():
    c = base_config()
    c.sft.steps, c.rollout.max_context, c.sft.max_len = 3, 1024, 768
    before = c.to_dict()
    changed = apply_smoke(c)
    assert "sft.steps" not in changed and c.sft.steps == 3
    capped = {f"{s}.{f}" for s, f in [*CAPS, *SETS]}
    after = c.to_dict()
    for section, fields in before.items():
        if isinstance(fields, dict):
            for field, value in fields.items():
                if f"{section}.{field}" not in capped:
                    assert after[section][field] == value, (section, field)


def test_a_field_set_on_the_command_line_keeps_its_value():
    c = base_config()
    c.sft.steps, c.sft.batch_size = 20, 16
    changed = apply_smoke(c, keep=frozenset({"sft.steps"}))
    assert c.sft.steps == 20 and c.sft.batch_size == 2
    assert "sft.steps" not in changed


def test_booleans_are_not_caps():
    c = base_config()
    c.train.eval_samples = True  # an int subclass (> its cap 0): never lowered as a count
    assert "train.eval_samples" not in apply_smoke(c) and c.train.eval_samples is True


def test_a_smoke_run_always_updates_keeps_one_checkpoint_and_skips_the_export():
    c = base_config()
    c.train.drop_zero_advantage, c.train.keep_best, c.train.export_best = True, 3, True
    changed = apply_smoke(c)
    assert (c.train.drop_zero_advantage, c.train.keep_best, c.train.export_best) == (
        False, 1, False)
    assert changed["train.export_best"] is False and changed["train.drop_zero_advantage"] is False
    c = base_config()
    c.train.export_best = True
    apply_smoke(c, keep=frozenset({"train.export_best"}))  # asked for on the command line
    assert c.train.export_best is True
