"""GSM8K loader: record type, final-answer parsing, splits."""

import json

import pytest

from mtrl.data import MathTask, load_gsm8k, parse_gsm8k_answer


def test_parse_answer_strips_marker_and_thousands_separators():
    assert parse_gsm8k_answer("3 + 4 = <<3+4=7>>7\n#### 1,080") == ("3 + 4 = <<3+4=7>>7", "1080")
    assert parse_gsm8k_answer("#### -5") == ("", "-5")
    with pytest.raises(ValueError, match="no '#### ' line"):
        parse_gsm8k_answer("the answer is 4")
    with pytest.raises(ValueError, match="not a number"):
        parse_gsm8k_answer("x\n#### four")


@pytest.mark.parametrize("split, size", [("train", 7473), ("test", 1319)])
def test_splits_load_every_row(shared_data, split, size):
    tasks = load_gsm8k(shared_data / "gsm8k", split)
    assert len(tasks) == size
    assert tasks[0].task_id == f"gsm8k/{split}/0"
    first = json.loads((shared_data / "gsm8k" / f"{split}.jsonl").open().readline())
    assert tasks[0].question == first["question"]
    assert first["answer"].endswith("#### " + tasks[0].answer)
    assert all("####" not in t.solution and "," not in t.answer for t in tasks)


def test_math_task_validates_the_answer():
    assert MathTask("t", "q", "-2.5").answer_value == -2.5
    with pytest.raises(ValueError, match="plain number"):
        MathTask("t", "q", "1,000")
    with pytest.raises(ValueError, match="non-empty"):
        MathTask("", "q", "1")


def test_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="test.jsonl does not exist; expected GSM8K"):
        load_gsm8k(tmp_path, "test")
    with pytest.raises(ValueError, match="split must be one of"):
        load_gsm8k(tmp_path, "dev")
