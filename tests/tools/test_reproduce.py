"""tools/reproduce.py end to end on a stubbed trainer: the claim's arms run from one
warm start per seed through the shared arm runner, the record has its keys
(mtrl/evidence/claims.py) and the paired difference, and the BENCHMARKS block gets
(then keeps one) row per claim."""

import json
import pathlib

import pytest

from mtrl.evidence import arm_runs
from mtrl.evidence.claim_table import BEGIN, END, update_table
from mtrl.evidence.claims import CLAIMS_DIR, load_claim
from mtrl.training.run.provenance import code_state, run_provenance, write_provenance
from tools import reproduce

# Stubbed test success per (arm, seed): multi_turn beats single_turn by 0.3, 0.2, 0.4.
SUCCESS = {("single_turn", 0): 0.2, ("single_turn", 1): 0.1, ("single_turn", 2): 0.3,
           ("multi_turn", 0): 0.5, ("multi_turn", 1): 0.3, ("multi_turn", 2): 0.7,
           ("plain", 0): 0.2, ("plain", 1): 0.1, ("level_feedback", 0): 0.5,
           ("level_feedback", 1): 0.3}
# The shared warm start's test success per seed: multi_turn (the positive control) gains
# 0.4, 0.3, 0.4 over it, an interval above 0, so the verdict can speak.
POST_SFT = {0: 0.1, 1: 0.0, 2: 0.3}


def fake_trainer(commands, code=None):
    """Stands in for `python -m mtrl.train`: writes summary.json, metrics.jsonl and
    provenance.json (this checkout's code state, or `code`; warm digest "warm<seed>")."""
    code = code or code_state()

    def run(command, log):
        commands.append(command)
        flags = dict(arg[2:].split("=", 1) for arg in command if arg.startswith("--"))
        workdir = pathlib.Path(flags["workdir"])
        workdir.mkdir(parents=True, exist_ok=True)
        seed = int(flags["config.seed"])
        arm = workdir.parent.name
        if flags.get("config.train.steps") == "0":
            summary = {"steps": 0}
        else:
            success = SUCCESS[(arm, seed)]
            summary = {"steps": 2, "minutes": 0.1, "best_step": 2, "over_budget": False,
                       "final_best_success": success, "post_sft_test_success": POST_SFT[seed],
                       "test_metrics": {"test_success": success}}
            (workdir / "metrics.jsonl").write_text("\n".join(json.dumps(
                {"step": s, "step_time_s": 1.0, "rollout/generated_samples": 120.0})
                for s in (1, 2)) + "\n")
        provenance = run_provenance({"seed": seed}, {"digest": f"warm{seed}"}, None, code=code)
        summary["provenance"] = provenance
        write_provenance(workdir, provenance)
        (workdir / "summary.json").write_text(json.dumps(summary))
        log.write_text("ok\n")
        return 0
    return run


def test_reproduce_end_to_end_writes_record_and_table_row(tmp_path, monkeypatch):
    commands = []
    monkeypatch.setattr(arm_runs, "run_process", fake_trainer(commands))
    table = tmp_path / "BENCHMARKS.md"
    table.write_text("# Benchmarks\n\nearlier text\n")
    out = tmp_path / "rec.json"
    argv = ["--claim", "multi_vs_single_turn", "--seeds", "0,1,2", "--out", str(out),
            "--table", str(table), "--root", str(tmp_path / "runs"), "--steps", "2"]
    reproduce.main(argv)
    # One warm start per seed, shared by both arms; arms differ by their overrides.
    warm = [c for c in commands if "--config.train.steps=0" in c]
    assert len(warm) == 3 and len(commands) == 9
    single = [c for c in commands if "/single_turn/" in " ".join(c)]
    assert all("--config.rollout.num_generations=20" in c for c in single)
    assert all(any(a.startswith("--config.train.init_from=") and a.endswith(f"warm_seed{s}")
                   for a in c) for c, s in zip(single, (0, 1, 2)))
    record = json.loads(out.read_text())
    for key in ("claim", "source", "prediction", "metric", "split", "seeds", "arms",
                "difference", "verdict", "minutes"):
        assert key in record
    assert record["claim"] == "multi_vs_single_turn" and record["split"] == "test"
    assert record["metric"] == "test_success" and record["seeds"] == [0, 1, 2]
    assert record["metric_on"] == "test split"
    assert record["arms"]["single_turn"]["values"] == [0.2, 0.1, 0.3]
    assert record["arms"]["multi_turn"]["overrides"] == ["train.eval_turns=2"]
    assert record["arms"]["single_turn"]["overrides"] == ["rollout.num_turns=1",
                                                          "rollout.num_generations=20",
                                                          "train.eval_turns=2"]
    d = record["difference"]
    assert d["mean"] == pytest.approx(0.3) and len(d["ci95"]) == 2
    # d = (0.3, 0.2, 0.4): s = 0.1, t_{0.975,2} = 4.3027 -> half width 0.2484.
    assert d["ci95"] == pytest.approx([0.3 - 0.24841, 0.3 + 0.24841], abs=1e-4)
    assert record["verdict"] == "reproduced"
    assert record["scale"]["full_size"] is False and record["scale"]["steps"] == 2
    text = table.read_text()
    assert text.startswith("# Benchmarks\n\nearlier text\n") and BEGIN in text and END in text
    rows = [line for line in text.split(BEGIN)[1].split(END)[0].splitlines()
            if line.startswith("| multi_vs_single_turn |")]
    assert len(rows) == 1 and "+0.3 [+0.0516, +0.548]" in rows[0]
    assert "| test_success (test split) |" in rows[0]
    assert "**reproduced** (reduced scale: 2 of 20 steps, seeds 0,1,2 of 0,1,2,3,4)" in rows[0]
    # Running it again replaces the row instead of adding one.
    reproduce.main(argv)
    again = table.read_text()
    assert again.count("| multi_vs_single_turn |") == 1 and again.count(BEGIN) == 1


def test_reproduce_writes_no_benchmark_page_row_by_default(tmp_path, monkeypatch):
    """Claim numbers are restated in RESULTS.md alone (generated from the records); a
    record outside experiments/claims/records leaves every page as it was."""
    monkeypatch.setattr(arm_runs, "run_process", fake_trainer([]))
    page = reproduce.ROOT / "BENCHMARKS.md"
    before = page.read_text()
    results = reproduce.ROOT / "RESULTS.md"
    results_before = results.read_text()
    reproduce.main(["--claim", "multi_vs_single_turn", "--seeds", "0,1", "--out",
                    str(tmp_path / "rec.json"), "--root", str(tmp_path / "runs"),
                    "--steps", "2"])
    assert page.read_text() == before and results.read_text() == results_before
    assert (tmp_path / "rec.json").is_file()


def test_table_keeps_other_claims_rows():
    record = {"claim": "a", "source": "S, 2025", "metric": "test_success", "split": "test",
              "seeds": [0, 1], "arms": {"x": {"values": [0.1, 0.2]},
                                        "y": {"values": [0.3, None]}},
              "difference": {"mean": 0.2, "ci95": None}, "verdict": "inconclusive",
              "guard": None, "minutes": 3.0}
    text = update_table("top\n", record, "experiments/claims/records/a.json")
    text = update_table(text, dict(record, claim="b"), "experiments/claims/records/b.json")
    text = update_table(text, dict(record, claim="a", verdict="reproduced"), "a.json")
    block = text.split(BEGIN)[1].split(END)[0]
    rows = [line for line in block.splitlines() if line.startswith("| a |") or
            line.startswith("| b |")]
    assert [r[:5] for r in rows] == ["| a |", "| b |"]
    assert "**reproduced**" in rows[0] and "0.3 (0.3 / -)" in rows[0]


def test_every_registered_claim_loads_and_the_dry_run_prints_its_arms(tmp_path, capsys):
    names = sorted(p.stem for p in CLAIMS_DIR.glob("*.py"))
    assert {"multi_vs_single_turn", "level_feedback_vs_plain", "termination_samples"} <= set(names)
    for name in names:
        claim = load_claim(name)
        assert claim.prediction and claim.source and claim.metric
    reproduce.main(["--claim", "termination_samples", "--seeds", "0,1", "--dry-run",
                    "--root", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("[warm") for line in lines) == 2
    assert any("--config.rollout.termination_threshold=3.8" in line for line in lines)
    with pytest.raises(SystemExit, match="--claim: unknown 'nope'"):
        load_claim("nope")


def test_claims_on_one_suite_share_the_warm_starts(tmp_path, monkeypatch):
    commands = []
    monkeypatch.setattr(arm_runs, "run_process", fake_trainer(commands))
    common = ["--seeds", "0,1", "--table", str(tmp_path / "B.md"), "--root",
              str(tmp_path / "runs"), "--steps", "2"]
    reproduce.main(["--claim", "multi_vs_single_turn", "--out", str(tmp_path / "a.json"),
                    *common])
    reproduce.main(["--claim", "level_feedback_vs_plain", "--out", str(tmp_path / "b.json"),
                    *common])
    warm = [c for c in commands if "--config.train.steps=0" in c]
    assert len(warm) == 2  # the second claim reused both seeds' SFT runs
    # A different common override is a different warm start.
    reproduce.main(["--claim", "level_feedback_vs_plain", "--out", str(tmp_path / "c.json"),
                    "--override", "sft.steps=5", *common])
    assert len([c for c in commands if "--config.train.steps=0" in c]) == 4


def test_a_training_side_metric_is_not_labelled_as_the_test_split():
    from mtrl.evidence.claims import measured_on
    assert measured_on("generated_samples_per_step") == "training rollouts"
    assert measured_on("ood_test_success") == measured_on("test_success") == "test split"


def test_reuse_keeps_arms_that_finished_with_the_same_command(tmp_path, monkeypatch):
    commands = []
    monkeypatch.setattr(arm_runs, "run_process", fake_trainer(commands))
    table = tmp_path / "BENCHMARKS.md"
    table.write_text("# Benchmarks\n")
    argv = ["--claim", "multi_vs_single_turn", "--seeds", "0,1", "--table", str(table),
            "--root", str(tmp_path / "runs"), "--steps", "2"]
    reproduce.main([*argv, "--out", str(tmp_path / "first.json")])
    assert len(commands) == 6  # 2 warm starts + 2 arms x 2 seeds
    # A stopped run: seed 1's multi_turn arm never finished.
    stopped = tmp_path / "runs" / "multi_vs_single_turn" / "multi_turn" / "seed1"
    (stopped / "summary.json").unlink()
    commands.clear()
    reproduce.main([*argv, "--reuse", "--out", str(tmp_path / "second.json")])
    assert len(commands) == 1 and "/multi_turn/seed1" in " ".join(commands[0])
    first, second = (json.loads((tmp_path / f).read_text()) for f in ("first.json", "second.json"))
    assert first["arms"] == second["arms"] and first["difference"] == second["difference"]
    assert second["minutes"] >= 3 * 0.1  # the three reused arms' own minutes (0.1 each)
    # Without --reuse every arm runs again; with it, a changed command is not reused.
    commands.clear()
    reproduce.main([*argv, "--out", str(tmp_path / "third.json")])
    assert len(commands) == 4
    commands.clear()
    reproduce.main([*argv, "--reuse", "--steps", "3", "--out", str(tmp_path / "fourth.json")])
    assert len(commands) == 4 and all("--config.train.steps=3" in c for c in commands)


def test_reuse_refuses_runs_of_other_code_or_another_warm_start(tmp_path, monkeypatch):
    commands = []
    monkeypatch.setattr(arm_runs, "run_process", fake_trainer(commands))
    argv = ["--claim", "multi_vs_single_turn", "--seeds", "0,1", "--table",
            str(tmp_path / "B.md"), "--root", str(tmp_path / "runs"), "--steps", "2",
            "--out", str(tmp_path / "r.json")]
    reproduce.main(argv)
    first = json.loads((tmp_path / "r.json").read_text())
    run = first["runs"][0]
    assert run["provenance"]["code"] == code_state() and len(run["metrics_sha256"]) == 64
    assert [p["step"] for p in run["curve"]] == [1, 2]
    # The same command under other code: the warm starts are refused in one line.
    other = dict(code_state(), commit="0" * 40)
    monkeypatch.setattr(arm_runs, "code_state", lambda: other)
    with pytest.raises(SystemExit, match=r"warm_seed0 cannot be reused: its commit differs"):
        reproduce.main(argv)
    monkeypatch.undo()
    monkeypatch.setattr(arm_runs, "run_process", fake_trainer(commands))
    # An arm that started from another warm start is refused under --reuse.
    arm = tmp_path / "runs" / "multi_vs_single_turn" / "multi_turn" / "seed1"
    recorded = json.loads((arm / "provenance.json").read_text())
    recorded["warm_start"] = {"digest": "another"}
    write_provenance(arm, recorded)
    with pytest.raises(SystemExit, match="seed1 cannot be reused: it started from another"):
        reproduce.main([*argv, "--reuse"])


def test_arms_runs_the_named_arms_in_order_and_the_reuse_run_writes_the_record(
        tmp_path, monkeypatch):
    commands = []
    monkeypatch.setattr(arm_runs, "run_process", fake_trainer(commands))
    table = tmp_path / "BENCHMARKS.md"
    table.write_text("# Benchmarks\n")
    out = tmp_path / "rec.json"
    argv = ["--claim", "multi_vs_single_turn", "--table", str(table), "--out", str(out),
            "--root", str(tmp_path / "runs"), "--steps", "2"]
    for seed in ("0", "1"):  # one process per seed, treatment first
        reproduce.main([*argv, "--seeds", seed, "--arms", "multi_turn,single_turn"])
    arms = [pathlib.Path(dict(a[2:].split("=", 1) for a in c if a.startswith("--"))
                         ["workdir"]).parent.name for c in commands
            if "--config.train.steps=0" not in c]
    assert arms == ["multi_turn", "single_turn"] * 2
    assert not out.exists() and BEGIN not in table.read_text()  # no record from --arms
    commands.clear()
    reproduce.main([*argv, "--seeds", "0,1", "--reuse"])
    assert commands == []  # every run reused
    record = json.loads(out.read_text())
    assert record["arms"]["multi_turn"]["values"] == [0.5, 0.3]
    with pytest.raises(SystemExit, match="--arms: unknown \\['two_turn'\\]"):
        reproduce.main([*argv, "--seeds", "0", "--arms", "two_turn"])


def test_an_arm_identical_to_another_claims_run_is_that_run(tmp_path, monkeypatch):
    """With reuse, an arm whose command equals a finished run of another claim (but for
    its own folder), under the same code and warm start, is not run again: its record
    reads that run and names it; other overrides, or runs of other code, run."""
    commands = []
    monkeypatch.setattr(arm_runs, "run_process", fake_trainer(commands))
    config = arm_runs.suite_config("default")

    def plan(claim, **changes):
        return arm_runs.ArmPlan(config=config, root=tmp_path / claim, steps=2,
                                warm_root=tmp_path / "warm", **changes)
    warm = arm_runs.warm_start(plan("a"), 0)
    first = arm_runs.run_arm(plan("a"), "multi_turn", (), 0, warm)
    assert len(commands) == 2 and "same_run_as" not in first
    twin = arm_runs.run_arm(plan("b", reuse=True), "multi_turn", (), 0, warm)
    assert len(commands) == 2  # nothing ran
    assert twin["same_run_as"] == first["workdir"] and twin["test_success"] == 0.5
    assert twin["workdir"] != first["workdir"]
    assert json.loads((pathlib.Path(twin["workdir"]) / "same_run_as.json").read_text()) == \
        {"workdir": first["workdir"]}
    # Without reuse, or with other overrides, it runs.
    arm_runs.run_arm(plan("c"), "multi_turn", (), 0, warm)
    arm_runs.run_arm(plan("d", reuse=True), "multi_turn", ("train.eval_turns=2",), 0, warm)
    assert len(commands) == 4
    # Runs of other code are no twins: the arm runs.
    other = dict(code_state(), commit="0" * 40)
    ran = arm_runs.run_arm(plan("e", reuse=True, code=other), "multi_turn", (), 0, warm)
    assert len(commands) == 5 and "same_run_as" not in ran
