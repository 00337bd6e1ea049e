"""Shared test fixtures: CPU-only JAX with fast-compiling XLA flags, a compilation
cache shared by the session, and the location of ../shared/data."""

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

# Two XLA:CPU compile settings for the test session (xdist workers and every
# subprocess a test starts inherit XLA_FLAGS; tests/parallel/workers.py adds its
# device count to them). The suite's programs are tiny and each compiled once, so
# compiling fast pays far more than running slower costs:
# - --xla_backend_optimization_level=0: no LLVM optimization of the generated code.
#   Back to back on the quiet 2-core machine, same tree: 14 min 01 s / 1479 s of CPU
#   at the default level, 10 min 27 s / 1068 s at 0.
# - --xla_cpu_use_fusion_emitters=false: XLA:CPU's elemental fusion emitters instead
#   of its newer MLIR fusion emitters, whose compile time dominated: two packing and
#   log-probability tests 27.7 -> 14.4 s of CPU; the whole suite 9 min 53 s / 1003 s
#   -> 8 min 28 s / 835 s (measured when the flag was chosen).
# Both change how XLA:CPU generates machine code, not what a program computes (up to
# float rounding; every comparison in the suite passes either way); experiment
# commands keep XLA's defaults. A value given in XLA_FLAGS wins.
for flag, value in (("--xla_backend_optimization_level", "0"),
                    ("--xla_cpu_use_fusion_emitters", "false")):
    if flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = " ".join(
            [os.environ.get("XLA_FLAGS", ""), f"{flag}={value}"]).strip()

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(os.environ.get("MTRL_SHARED_DATA", ROOT.parent / "shared" / "data"))


# The longest files first (by the seconds of each file in a `--durations=0` run of
# the suite on the 2-core machine, 2026-11-26): collected ahead of the
# rest, so that under pytest-xdist they start early instead of one of them running
# alone while the other worker has nothing left.
LONG_FIRST = (
    "tests/test_readme_commands.py",
    "tests/training/loop/test_rl_learns.py",
    "tests/training/config/test_configs.py",
    "tests/training/update/test_packing.py",
    "tests/training/sft/test_sft_resume.py",
    "tests/training/loop/test_interrupts.py",
    "tests/parallel/test_multiprocess_trainer.py",
    "tests/bench/test_gpu.py",
    "tests/training/loop/test_interrupt_evaluations.py",
    "tests/notebooks/test_quickstart.py",
    "tests/envs/openenv/test_train.py",
    "tests/envs/openenv/test_client.py",
    "tests/parallel/test_multiprocess.py",
    "tests/sampling/test_sampler.py",
    "tests/parallel/test_mesh_equality.py",
    "tests/training/advantages/test_estimators.py",
    "tests/training/loop/test_methods_trainer.py",
    "tests/training/loop/test_resume_windows.py",
    "tests/training/loop/test_resume.py",
    "tests/training/config/test_smollm2_configs.py",
)


def pytest_collection_modifyitems(config, items):
    """LONG_FIRST's files first, in its order; the rest keep theirs (a stable sort:
    the tests of a module stay together, for its module-scoped fixtures)."""
    del config
    rank = {path: i for i, path in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`-n 2` (xdist's default "load" distribution) balances by work stealing: a worker
    that runs out takes the last half of the other's queue, so the two finish
    together; LONG_FIRST puts the long tests at the front of the queue, where no
    steal moves them to the end."""
    if config.getvalue("dist") == "load":
        from xdist.scheduler import WorkStealingScheduling
        return WorkStealingScheduling(config, log)
    return None


def pytest_unconfigure(config):
    if _OWN_CACHE:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    """../shared/data beside the project (override with MTRL_SHARED_DATA)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA}; set MTRL_SHARED_DATA")
    return SHARED_DATA


@pytest.fixture(scope="session")
def uninterrupted(tmp_path_factory):
    """config text -> (config file, workdir) of its uninterrupted trainer run, made once
    per session and shared by the resume tests that compare against it
    (tests/training/kill_resume.py). The pytest-xdist workers share one directory (the
    parent of their base temporary directories) and a file lock per config."""
    from tests.training.kill_resume import uninterrupted_run
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    root = root / "uninterrupted_runs"
    return lambda config_text: uninterrupted_run(root, config_text)


@pytest.fixture
def no_work(monkeypatch):
    """Tokenizer, model, data and environment builders that fail if reached: a test
    using it shows that a config check ran before any of that work."""
    from mtrl.training.run import build as build_module

    def fail(*args, **kwargs):
        raise AssertionError("model, data or environment work started before the config "
                             "was checked")
    for name in ("build_models", "build_suite", "build_environment", "build_tokenizer"):
        monkeypatch.setattr(build_module, name, fail)
