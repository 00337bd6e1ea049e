"""A config's suite and its real environment (sandbox included), for the tests that
render what each agent sees (test_default_disjoint.py, test_try_again_disjoint.py)."""

import contextlib
import pathlib

from mtrl.data.suite import build_suite
from mtrl.envs.registry import build_environment
from mtrl.training.config import module_from_file, parse

CONFIGS = pathlib.Path(__file__).resolve().parents[3] / "experiments" / "configs"


@contextlib.contextmanager
def config_world(stem: str):
    """(parsed run config, suite, environment) of experiments/configs/<stem>.py; the
    environment is closed on exit."""
    run = parse(module_from_file(CONFIGS / f"{stem}.py").get_config())
    suite = build_suite(run.data, run.seed)
    built = build_environment(run.env, run.rollout.num_turns, run.data.name, suite, None)
    try:
        yield run, suite, built.env
    finally:
        built.close()
