"""The results index: RESULTS.md is generated from the committed study and claim
records (and is up to date with them); each row's numbers come from its record."""

import json
import pathlib

import pytest

from mtrl.evidence import results_index
from mtrl.evidence.results_index import fmt_interval, main, render, resolve

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_results_md_is_up_to_date_with_the_records():
    """Regenerate and compare: a record, study.json or claim file changed without
    `python -m mtrl.evidence.results_index --write` fails here."""
    assert (ROOT / "RESULTS.md").read_text() == render(ROOT), (
        "RESULTS.md is stale: python -m mtrl.evidence.results_index --write")


def test_every_study_folder_has_a_readme_and_an_index_entry():
    skip = {"configs", "claims", "__pycache__"}
    studies = [p for p in (ROOT / "experiments").iterdir() if p.is_dir() and p.name not in skip]
    assert studies
    for folder in studies:
        assert (folder / "README.md").exists(), folder
        study = json.loads((folder / "study.json").read_text())
        assert (folder / study["record"]).exists(), folder
        assert f"[{folder.name}](experiments/{folder.name}/)" in render(ROOT)


def test_resolve_paths_lists_and_other_records(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"runs": [{"x": 1}, {"x": 2}], "ci": [0.1, 0.2]}))
    (tmp_path / "b.json").write_text(json.dumps({"y": {"z": 5}}))
    assert resolve(tmp_path, "a.json", "runs.*.x") == [1, 2]
    assert resolve(tmp_path, "a.json", "ci.1") == 0.2
    assert resolve(tmp_path, "a.json", "b.json:y.z") == 5


def test_fmt_interval_digits_follow_the_width():
    assert fmt_interval(0.83, (0.7243, 0.9357)) == "+0.83 [+0.72, +0.94]"
    assert fmt_interval(-0.0078, (-0.066, 0.0504)) == "-0.008 [-0.066, +0.050]"


def _tree(tmp_path: pathlib.Path) -> pathlib.Path:
    study = tmp_path / "experiments" / "toy_study"
    study.mkdir(parents=True)
    (study / "r.json").write_text(json.dumps({
        "runs": [{"after": 0.5, "before": 0.1}, {"after": 0.6, "before": 0.1},
                 {"after": 0.7, "before": 0.2}],
        "code": {"commit": "0123456789abcdef"}}))
    (study / "study.json").write_text(json.dumps({
        "question": "Does it learn?", "verdict": "yes", "measure": "after - before",
        "record": "r.json", "estimate": {"after": "runs.*.after", "before": "runs.*.before"},
        "commit": "code.commit"}))
    claims = tmp_path / "experiments" / "claims"
    (claims / "records").mkdir(parents=True)
    (claims / "toy_claim.py").write_text("")
    (claims / "records" / "toy_claim.json").write_text(json.dumps({
        "title": "A beats B", "metric": "test_success", "split": "test", "seeds": [0, 1, 2],
        "difference": {"mean": 0.4, "ci95": [0.28, 0.53]}, "verdict": "reproduced",
        "provenance": {"code": {"commit": "fedcba9876543210", "dirty": False}}}))
    return tmp_path


def test_rows_are_read_from_the_records(tmp_path):
    root = _tree(tmp_path)
    text = render(root)
    # d = 0.4, 0.5, 0.5: mean 0.467, t(0.975, 2) * s / sqrt(3) = 0.143
    assert ("| [toy_study](experiments/toy_study/) | Does it learn? | after - before | "
            "+0.47 [+0.32, +0.61] (3 seeds) | yes | 0123456 |") in text
    assert ("| toy_claim | A beats B | test_success (test) | +0.40 [+0.28, +0.53] (3 seeds) "
            "| reproduced | fedcba9 |") in text


def test_a_superseded_claim_record_says_so(tmp_path):
    root = _tree(tmp_path)
    records = root / "experiments" / "claims" / "records"
    (records / "superseded").mkdir()
    (records / "toy_claim.json").rename(records / "superseded" / "toy_claim_2026-11-26.json")
    assert "superseded (old split): reproduced" in render(root)


def test_check_fails_on_a_stale_index_and_write_fixes_it(tmp_path, capsys):
    root = _tree(tmp_path)
    assert main(["--root", str(root), "--check"]) == 1
    assert main(["--root", str(root), "--write"]) == 0
    assert main(["--root", str(root), "--check"]) == 0
    record = root / "experiments" / "toy_study" / "r.json"
    data = json.loads(record.read_text())
    data["runs"][0]["after"] = 0.9  # a record changed: the index is stale again
    record.write_text(json.dumps(data))
    assert main(["--root", str(root), "--check"]) == 1


def test_mismatched_sides_are_refused(tmp_path):
    root = _tree(tmp_path)
    study = root / "experiments" / "toy_study" / "study.json"
    spec = json.loads(study.read_text())
    spec["estimate"]["before"] = ["runs.0.before"]
    study.write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="3 'after' values, 1 'before'"):
        results_index.render(root)


def test_claims_true_by_construction_are_labelled_positive_controls():
    """A claim whose baseline cannot succeed on its suite is a positive control of the
    suite, not a reproduction of its paper: the index says so beside the verdict."""
    from mtrl.evidence.claims import load_claim
    rows = {row.split(" | ")[0].lstrip("| "): row
            for row in results_index.claim_rows(ROOT)}
    built_in = {"multi_vs_single_turn", "level_feedback_vs_plain"}
    for name in built_in:
        assert load_claim(name).by_construction
        assert "positive control, not a test of the paper (reproduced; true by construction"\
            in rows[name], rows[name]
    for name, row in rows.items():
        if name not in built_in:
            assert "positive control, not a test" not in row, row
