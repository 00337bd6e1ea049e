"""Shared test fixtures: CPU-only JAX and the location of ../shared/data."""

import os
import pathlib

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(os.environ.get("MTRL_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    """../shared/data beside the project (override with MTRL_SHARED_DATA)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA}; set MTRL_SHARED_DATA")
    return SHARED_DATA
