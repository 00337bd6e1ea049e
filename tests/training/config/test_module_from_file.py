"""module_from_file: a config file (or a block file it loads) executed by path as a
fresh module, as config files are loaded (not imported from a package)."""

import sys

import pytest

from mtrl.training.config import module_from_file


def test_a_file_runs_as_a_fresh_module_named_after_its_stem(tmp_path):
    path = tmp_path / "some_blocks.py"
    path.write_text("import pathlib\nHERE = pathlib.Path(__file__).name\nCALLS = []\n")
    first, second = module_from_file(path), module_from_file(str(path))
    assert first.__name__ == "some_blocks" and first.HERE == "some_blocks.py"
    first.CALLS.append(1)
    assert second.CALLS == [] and "some_blocks" not in sys.modules


def test_a_missing_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        module_from_file(tmp_path / "nope.py")
