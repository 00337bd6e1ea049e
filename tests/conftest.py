"""Shared test fixtures: CPU-only JAX, a compilation cache shared by the session, and
the location of ../shared/data."""

import os
import pathlib
import shutil
import tempfile

os.environ.setdefault("JAX_PLATFORMS", "cpu")

# One persistent JAX compilation cache for the whole test session: the pytest-xdist
# workers and every trainer subprocess a test starts inherit these variables, so the
# programs of the many tiny end-to-end runs (the same model, sampler and train step
# shapes) are compiled once per session instead of once per process. A cached program
# is the same executable, so results are bitwise those of a fresh compile. The
# directory is new per session (made by the process that starts the session, removed
# when it ends), so no stale program outlives a run; set JAX_COMPILATION_CACHE_DIR to
# use another (it is then neither created nor removed here).
_OWN_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _OWN_CACHE = tempfile.mkdtemp(prefix="mtrl-test-jax-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _OWN_CACHE
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(os.environ.get("MTRL_SHARED_DATA", ROOT.parent / "shared" / "data"))


def pytest_unconfigure(config):
    if _OWN_CACHE:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    """../shared/data beside the project (override with MTRL_SHARED_DATA)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA}; set MTRL_SHARED_DATA")
    return SHARED_DATA
