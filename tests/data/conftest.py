"""Loaded once per session: the data sets several test modules compare against."""

import pytest

from mtrl.data import load_humaneval, load_mbpp


@pytest.fixture(scope="session")
def mbpp_dir(shared_data):
    return shared_data / "mbpp"


@pytest.fixture(scope="session")
def humaneval_tasks():
    return load_humaneval()


@pytest.fixture(scope="session")
def mbpp_full_tasks(mbpp_dir):
    return load_mbpp(mbpp_dir, "full")


@pytest.fixture(scope="session")
def mbpp_sanitized_tasks(mbpp_dir):
    return load_mbpp(mbpp_dir, "sanitized")
