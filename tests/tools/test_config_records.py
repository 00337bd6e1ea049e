"""tools/config_records.py: every experiment config's record, and a comparison that
names each field that differs (how a refactor shows it changed no experiment)."""

import json
import subprocess
import sys

from tools.config_records import ROOT, differences, records


def test_the_records_cover_every_config_and_match_config_json():
    from mtrl.training.config import config_record, module_from_file
    found = records(ROOT)
    files = sorted(p.name for p in (ROOT / "experiments" / "configs").glob("*.py"))
    assert sorted(n for n in found if ":" not in n) == files
    assert "tool.py:mbpp" in found and found["tool.py:mbpp"] != found["tool.py"]
    default = module_from_file(ROOT / "experiments" / "configs" / "default.py").get_config()
    assert found["default.py"] == json.loads(json.dumps(config_record(default), default=str))


def test_differences_name_each_field_and_each_config():
    before = {"a.py": {"env": {"name": "code", "workers": 1}}, "b.py": {"seed": 0}}
    after = {"a.py": {"env": {"name": "math"}}, "c.py": {"seed": 0}}
    assert differences(before, after) == [
        "a.py env.name: 'code' -> 'math'", "a.py env.workers: 1 -> '<absent>'",
        "b.py: removed", "c.py: added"]
    assert differences(after, after) == []


def test_compare_exits_one_on_a_difference(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"a.py": {"seed": 0}}))
    (tmp_path / "y.json").write_text(json.dumps({"a.py": {"seed": 1}}))
    script = [sys.executable, "-m", "tools.config_records", "--compare"]
    same = subprocess.run([*script, tmp_path / "x.json", tmp_path / "x.json"], cwd=ROOT,
                          capture_output=True, text=True)
    changed = subprocess.run([*script, tmp_path / "x.json", tmp_path / "y.json"], cwd=ROOT,
                             capture_output=True, text=True)
    assert same.returncode == 0 and "no differences (1 configs)" in same.stdout
    assert changed.returncode == 1 and "a.py seed: 0 -> 1" in changed.stdout


def test_another_checkout_is_recorded_with_its_own_mtrl(tmp_path):
    """--root elsewhere: the records come from that checkout's config_record (a child
    process imports its mtrl), not from this checkout's."""
    config = tmp_path / "mtrl" / "training" / "config"
    config.mkdir(parents=True)
    for folder in (tmp_path / "mtrl", tmp_path / "mtrl" / "training"):
        (folder / "__init__.py").write_text("")
    (config / "__init__.py").write_text(
        "def config_record(c):\n    return {'seen_by': 'the other mtrl', **c}\n")
    (tmp_path / "experiments" / "configs").mkdir(parents=True)
    (tmp_path / "experiments" / "configs" / "a.py").write_text(
        f"def get_config():\n    return {{'path': {str(tmp_path / 'data')!r}}}\n")
    assert records(tmp_path) == {"a.py": {"seen_by": "the other mtrl", "path": "<ROOT>/data"}}
