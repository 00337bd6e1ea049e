"""The DATASETS registry: names, one calling convention, same tasks as the loaders."""

import pytest

from mtrl.data import DATASETS, load_code_tasks, load_mbpp


def test_registered_names():
    assert DATASETS.names() == ("coop_humaneval", "humaneval", "intfn", "mbpp",
                                "mbpp_sanitized")


def test_registry_loaders_match_the_direct_loaders(mbpp_dir, humaneval_tasks):
    assert DATASETS.get("mbpp_sanitized")(mbpp_dir, "validation") == load_mbpp(
        mbpp_dir, "sanitized", "validation")
    assert load_code_tasks("mbpp", mbpp_dir, "prompt", show_first_test=False) == load_mbpp(
        mbpp_dir, "full", "prompt", show_first_test=False)
    assert load_code_tasks("humaneval") == humaneval_tasks
    held = load_code_tasks("intfn", None, "heldout", num_tasks=3)
    assert [t.task_id for t in held] == [f"intfn/heldout/{i:05d}" for i in range(3)]


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(KeyError, match="must be one of coop_humaneval, humaneval, intfn, mbpp"):
        DATASETS.get("apps")
