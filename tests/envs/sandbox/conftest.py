"""Fixtures for the sandbox tests: one shared pool with short limits, and a pool per
hostile-program module (test_adversarial_*.py) with a secret in its environment."""

import os

import pytest

from mtrl.envs.sandbox import Limits, SandboxPool
from tests.envs.sandbox import hostile

# Short limits keep the hostile cases fast; memory leaves room for the interpreter.
FAST_LIMITS = Limits(wall_s_per_test=1.0, wall_s_total=6.0, cpu_s=2.0,
                     memory_bytes=512 << 20, file_size_bytes=1 << 20, output_bytes=4096)


@pytest.fixture(scope="session")
def fast_limits() -> Limits:
    return FAST_LIMITS


@pytest.fixture(scope="session")
def pool():
    with SandboxPool(num_workers=2, limits=FAST_LIMITS) as shared:
        yield shared


@pytest.fixture(scope="module")
def hostile_pool():
    # The secret is in the pool's environment before its slots start.
    os.environ["MTRL_FAKE_SECRET"] = hostile.SECRET
    try:
        with SandboxPool(num_workers=2, limits=hostile.LIMITS) as pool:
            yield pool
    finally:
        del os.environ["MTRL_FAKE_SECRET"]


@pytest.fixture(scope="module")
def baseline(hostile_pool):
    """The BASELINE batch's verdicts before a file's attacks (its first test asks)."""
    return hostile.verdicts(hostile_pool.run_batch(hostile.BASELINE))
