"""The GSM8K suite: disjoint slices of the shared files, filters, caps, demonstrations."""

import pytest

from mtrl.data.gsm8k_suite import GSM8KSuite, demonstration
from mtrl.data.suite import DataConfig, build_suite
from mtrl.envs.math import MathEnv, extract_answer


def config(shared_data, **kw):
    values = dict(name="gsm8k", path=str(shared_data / "gsm8k"), train_split="train[100:]",
                  eval_split="train[:100]", test_split="test", num_train=50, num_eval=20,
                  num_test=10)
    values.update(kw)
    return DataConfig(**values)


def test_splits_are_disjoint_and_capped(shared_data):
    suite = build_suite(config(shared_data), seed=0)
    assert isinstance(suite, GSM8KSuite)
    train, val, test = (suite.tasks(s) for s in ("train", "validation", "test"))
    assert (len(train), len(val), len(test)) == (50, 20, 10)
    ids = [{t.task_id for t in split} for split in (train, val, test)]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    questions = [{t.question for t in split} for split in (train, val)]
    assert not questions[0] & questions[1]
    assert train[0].task_id == "gsm8k/train/100" and test[0].task_id == "gsm8k/test/0"


def test_overlapping_slices_are_refused(shared_data):
    suite = build_suite(config(shared_data, eval_split="train[50:150]"), seed=0)
    with pytest.raises(ValueError, match="validation and train splits overlap"):
        suite.tasks("train")


def test_question_length_filter_and_bad_options(shared_data):
    suite = build_suite(config(shared_data, options={"max_question_chars": 150}), seed=0)
    assert all(len(t.question) <= 150 for t in suite.tasks("train"))
    with pytest.raises(ValueError, match="unknown \\['shuffle'\\]"):
        build_suite(config(shared_data, options={"shuffle": True}), seed=0)
    with pytest.raises(ValueError, match="data.path"):
        build_suite(config(shared_data, path=""), seed=0)


def test_learnable_band_file_keeps_only_its_train_problems(shared_data, tmp_path):
    from mtrl.data.task_filter import write_task_ids
    rates = {"gsm8k/train/103": 0.5, "gsm8k/train/110": 1.0, "gsm8k/train/120": 0.25}
    ids_file = tmp_path / "band.json"
    write_task_ids(ids_file, rates, samples=4)
    suite = build_suite(config(shared_data, options={"train_ids_file": str(ids_file)}), 0)
    assert [t.task_id for t in suite.tasks("train")] == ["gsm8k/train/103", "gsm8k/train/120"]
    assert len(suite.tasks("validation")) == 20  # validation and test stay whole
    write_task_ids(ids_file, {"gsm8k/train/5": 0.5}, samples=4)  # a validation problem
    with pytest.raises(ValueError, match="ids not in the train split"):
        build_suite(config(shared_data, options={"train_ids_file": str(ids_file)}),
                    0).tasks("train")


def test_demonstrations_end_in_the_boxed_answer_the_env_accepts(shared_data):
    suite = build_suite(config(shared_data, num_train=5), seed=0)
    env = MathEnv()
    pairs = suite.demonstrations(env, 1, sft=type("S", (), {"first_guess": ""})())
    assert len(pairs) == 1 and len(pairs[0]) == 5
    for task, (prompt, completion) in zip(suite.tasks("train"), pairs[0]):
        assert task.question in prompt and "<<" not in completion
        assert extract_answer(completion) == extract_answer(task.answer)
        state, _ = env.reset(task)
        assert env.step([state], [(completion,)], 1)[0].reward == 1.0
    assert demonstration(suite.tasks("train")[0]).endswith(
        f"\\boxed{{{suite.tasks('train')[0].answer}}}.")
