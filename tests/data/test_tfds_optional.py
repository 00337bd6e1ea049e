"""TFDS is an extra ([tfds], in [test]): importing mtrl, its trainer and every task suite
loads neither tensorflow_datasets nor array_record; only mtrl.data.tfds_builders does."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

CHECK = """
import sys
import mtrl, mtrl.data, mtrl.train, mtrl.training.loop.trainer
from mtrl.data.suite import SUITES
SUITES.load()  # every suite's module
loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow_datasets', 'array_record'))
assert not loaded, loaded
"""


def test_mtrl_imports_no_tfds():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}  # this checkout's mtrl
    subprocess.run([sys.executable, "-c", CHECK], check=True, env=env, cwd=ROOT)
