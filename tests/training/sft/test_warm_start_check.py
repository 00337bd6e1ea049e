"""The warm start's check: the exact-reproduction measure against greedy decoding, and
a WarmStarter whose first phase continues while the check fails, stops with one line
when it still fails, and resumes mid-check like an uninterrupted run."""

import dataclasses
import json
import types

import jax
import numpy as np
import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer
from mtrl.rollout.formatting import PlainFormat
from mtrl.sampling import Sampler, SamplingConfig
from mtrl.tokenizers import ByteTokenizer
from mtrl.training.run.keys import RunKeys
from mtrl.training.run.sections import SFTSection
from mtrl.training.sft.sft import SFTExamples, sft_examples
from mtrl.training.sft.warm_start import WarmStarter
from mtrl.training.sft.warm_start_check import (CheckResult, WarmStartCheckFailed,
                                                exact_fraction, exact_rows)

from tests.training.sft.tiny_sft import CONFIG, EOS, MAX_LEN, PAD, PAIRS, TOKENIZER


@pytest.fixture(scope="module")
def model():
    return nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))


def greedy(graphdef, params, prompts, max_new_tokens=5):
    """What greedy decoding writes after each prompt (the sampler's own loop)."""
    ids = [TOKENIZER.encode(PlainFormat().first(p)) for p in prompts]
    sampling = SamplingConfig(greedy=True, max_new_tokens=max_new_tokens,
                              stop_token_ids=(EOS,), pad_id=PAD)
    out = Sampler(nnx.merge(graphdef, params)).generate(ids, jax.random.key(0), sampling)
    return out.output.to_lists()


def test_exact_rows_are_what_greedy_decoding_reproduces(model):
    graphdef, params = model
    prompts = ["a", "bb", "c"]
    written = greedy(graphdef, params, prompts)  # 5 tokens each, or fewer ending in eos
    assert all(len(w) == 5 and EOS not in w for w in written)  # an untrained model rambles
    # A row whose completion is greedy's output (eos cut) is reproduced up to its eos,
    # which the untrained model does not write: so with the eos trained, no row is
    # exact; with the eos masked out, the rows it wrote are, and a changed token is not.
    rows = [(p, TOKENIZER.decode(w)) for p, w in zip(prompts, written)]
    examples = sft_examples(TOKENIZER, rows, PlainFormat(), MAX_LEN)
    np.testing.assert_array_equal(exact_rows(graphdef, params, examples), [False] * 3)
    no_eos = examples.loss_mask & (examples.tokens != EOS)
    wrong = examples.tokens.copy()
    first_completion = int(np.argmax(examples.loss_mask[2]))
    wrong[2, first_completion] = (wrong[2, first_completion] + 1) % 256
    cut = SFTExamples(wrong, examples.token_mask, no_eos)
    np.testing.assert_array_equal(exact_rows(graphdef, params, cut), [True, True, False])
    # Chunking (a padded last chunk) does not change the answer.
    np.testing.assert_array_equal(exact_rows(graphdef, params, cut, chunk=2), [True, True, False])
    assert exact_fraction(graphdef, params, cut) == (pytest.approx(2 / 3), 3)
    assert exact_fraction(graphdef, params, cut, limit=2) == (1.0, 2)
    with pytest.raises(ValueError, match=r"\[E, L\]"):
        exact_rows(graphdef, params, SFTExamples(wrong, examples.token_mask[:, :-1], no_eos))


def test_check_result_lines():
    result = CheckResult(agent=1, kind="first_turn", exact=0.02, rows=100, minimum=0.5,
                         phase=1, updates=750, round=2, rounds=2, extra_steps=100)
    assert not result.passed and not result.continues
    line = result.failure()
    assert "\n" not in line
    for part in ("agent 1", "0.020 of 100 held-out 'first_turn'",
                 "after 750 SFT updates (mixed phase)",
                 "sft.check_min_exact=0.5", "sft.first_phase_steps", "sft.check_extra_steps",
                 "sft.learning_rate", "--workdir"):
        assert part in line, part
    going_on = dataclasses.replace(result, round=1)
    assert going_on.continues and "phase goes on for 100 updates (continuation 2 of 2)" in \
        going_on.line()
    assert dataclasses.replace(result, exact=0.5).line().endswith(": passed")


class Suite:
    """A suite of three prompts whose validation rows are `heldout`."""

    def __init__(self, heldout):
        self.heldout = heldout

    def demonstrations(self, env, num_agents, sft):
        return [list(PAIRS)]

    def validation_demonstrations(self, env, num_agents, sft):
        return [list(self.heldout)]


def starter(workdir, heldout, model, **sft):
    graphdef, params = model
    c = types.SimpleNamespace(initial_params=lambda: [params], suite=Suite(heldout), env=None,
                              adapters=None, tokenizer=TOKENIZER, turn_format=None)
    section = SFTSection(**{**dict(steps=8, first_phase_steps=4, batch_size=3, max_len=MAX_LEN,
                                   learning_rate=1e-2, schedule="constant", checkpoint_every=5,
                                   check_min_exact=1.0, check_extra_steps=20, check_rounds=3),
                            **sft})
    return WarmStarter(c, section, 0, "", workdir, graphdef, None, RunKeys.from_seed(0), 1,
                       False, ("first_turn",), show_progress=False)


def sft_log(workdir):
    path = workdir / "sft.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Killed(Exception):
    pass


def logger(workdir, stop_at=None):
    """The trainer's SFT log (sft.jsonl); raises at the line (tag, step) `stop_at`, as a
    kill there would end the run."""
    def log(tag, step, metrics):
        if (tag, step) == stop_at:
            raise Killed(f"killed at {tag} {step}")
        with open(workdir / "sft.jsonl", "a") as f:
            f.write(json.dumps({"tag": tag, "step": step, **metrics}) + "\n")
    return log


def checks(workdir):
    return [(r["step"], r["phase"], r["exact"], r["passed"]) for r in sft_log(workdir)
            if r["tag"] == "sft_check/agent0"]


@pytest.fixture(scope="module")
def continued(tmp_path_factory, model):
    """An uninterrupted warm start whose first check fails: (workdir, params)."""
    workdir = tmp_path_factory.mktemp("whole")
    params = starter(workdir, PAIRS, model).run(logger(workdir))
    return workdir, params


def test_a_failed_check_continues_its_phase_until_it_passes(continued):
    workdir, _ = continued
    got = checks(workdir)
    # Checked after the first phase's 4 updates (not yet memorised), then every 20 more
    # until it passes; then after the mixed phase's 4, whose fresh optimizer can undo
    # the copy (here 3 rows of 3 -> 2), and continued the same way.
    assert got[0][:2] == (4, 0) and got[0][3] == 0.0
    for phase, planned in ((0, 4), (1, 4)):
        mine = [g for g in got if g[1] == phase]
        start = 0 if phase == 0 else max(g[0] for g in got if g[1] == 0)
        assert [g[0] for g in mine] == [start + planned + 20 * r for r in range(len(mine))]
        assert [g[3] for g in mine] == [0.0] * (len(mine) - 1) + [1.0] and mine[-1][2] == 1.0
    steps = [r["step"] for r in sft_log(workdir) if r["tag"] == "sft/agent0"]
    assert steps[-1] == got[-1][0]  # SFT ends with the last check


def test_a_weak_teachers_revisions_are_not_checked_after_mixing(tmp_path, model):
    made = starter(tmp_path, PAIRS, model)
    assert made.checked_after_mixing(0, "first_turn")
    for resubmit, checked in ((0.0, True), (0.7, False)):
        weak = dataclasses.replace(made, sft=dataclasses.replace(
            made.sft, resubmit_fraction=resubmit), first_phase=("revisions",))
        assert weak.checked_after_mixing(0, "revisions") is checked


def test_a_check_that_still_fails_stops_the_run_with_one_line(tmp_path, model, capsys):
    # Validation rows whose answers the train rows contradict: no continuation helps.
    heldout = [("a", "zzz"), ("b", "qq"), ("c", "jello")]
    with pytest.raises(WarmStartCheckFailed) as failed:
        starter(tmp_path, heldout, model, check_min_exact=0.5, check_rounds=1,
                check_extra_steps=2).run(logger(tmp_path))
    line = str(failed.value)
    assert "\n" not in line and line.startswith("SFT warm start failed its check: agent 0")
    assert "0.000 of 3 held-out 'first_turn' demonstrations after 6 SFT updates (first phase)" \
        in line
    assert "sft.check_min_exact=0.5" in line and "sft.first_phase_steps" in line
    assert checks(tmp_path) == [(4, 0, 0.0, 0.0), (6, 0, 0.0, 0.0)]
    assert max(r["step"] for r in sft_log(tmp_path)) == 6  # the mixed phase never ran
    printed = capsys.readouterr().out
    assert "phase goes on for 2 updates (continuation 1 of 1)" in printed and "failed" in printed


def test_no_check_when_off(tmp_path, model):
    heldout = [("a", "zzz")]  # would fail
    starter(tmp_path, heldout, model, check_min_exact=0.0).run(logger(tmp_path))
    assert checks(tmp_path) == []
    assert max(r["step"] for r in sft_log(tmp_path)) == 8


def kill_point(whole, where):
    """A log line (tag, step) of the uninterrupted run to end a run at."""
    got = checks(whole)
    lines = [(r["tag"], r["step"]) for r in sft_log(whole)]
    if where == "first check":
        return ("sft_check/agent0", got[0][0])
    if where == "continuing":  # a first-phase continuation's update
        return next(line for line in lines if line[0] == "sft/agent0" and line[1] > got[0][0])
    if where == "mixed check":
        return ("sft_check/agent0", next(g[0] for g in got if g[1] == 1))
    return lines[-2]  # SFT's last update, in the mixed phase (its checkpoint says where)


@pytest.mark.parametrize("where", ["first check", "continuing", "mixed check", "mixed end"])
def test_a_run_killed_mid_check_resumes_like_the_uninterrupted_one(tmp_path, model, continued,
                                                                   where):
    whole, expected = continued
    with pytest.raises(Killed):
        starter(tmp_path, PAIRS, model, checkpoint_every=3).run(
            logger(tmp_path, kill_point(whole, where)))
    params = starter(tmp_path, PAIRS, model, checkpoint_every=3).run(logger(tmp_path))
    assert sft_log(tmp_path) == sft_log(whole)
    jax.tree.map(np.testing.assert_array_equal, params[0], expected[0])


def test_the_family_builds_its_rows_from_the_validation_tasks():
    from mtrl.data.suite import build_suite
    from mtrl.envs.code import CodeEnv, CodeEnvConfig
    from mtrl.envs.sandbox import SandboxPool
    from mtrl.training.config import base_config
    from mtrl.training.config.readers import read_section
    c = base_config()
    c.data.num_train, c.data.num_eval, c.sft.revision_fraction = 30, 10, 0.0
    suite = build_suite(read_section(c, "data"), c.seed)
    with SandboxPool(num_workers=1) as pool:
        env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_style="compact",
                                    templates=suite.templates("tiny")), sandbox=pool)
        train = suite.demonstrations(env, 2, c.sft)
        heldout = suite.validation_demonstrations(env, 2, c.sft)
        prompts = {split: [env.reset(t)[1] for t in suite.tasks(split)]
                   for split in ("train", "validation")}
    for a in range(2):  # each validation task's prompt, answered like a train row
        assert [p for p, _ in heldout[a]] == [p[a] for p in prompts["validation"]]
        assert not {p for p, _ in heldout[a]} & {p for p, _ in train[a]}
        assert [p for p, _ in train[a]] == [p[a] for p in prompts["train"]]
    assert suite.tasks("train") and len(suite.tasks("validation")) == 10  # splits unchanged


class NoValidationRows:
    def demonstrations(self, env, num_agents, sft):
        return [list(PAIRS)]


def test_a_suite_without_validation_rows_is_refused_in_one_line(tmp_path, model):
    made = starter(tmp_path, PAIRS, model)  # checked: its suite has validation rows
    with pytest.raises(ValueError, match=r"^config\.sft\.check_min_exact: the "
                                         r"NoValidationRows suite builds no demonstrations"):
        dataclasses.replace(made, c=types.SimpleNamespace(**{**vars(made.c),
                                                            "suite": NoValidationRows()}))
    dataclasses.replace(made, sft=dataclasses.replace(made.sft, check_min_exact=0.0),
                        c=types.SimpleNamespace(**{**vars(made.c), "suite": NoValidationRows()}))


@pytest.mark.parametrize("field, value, message", [
    ("check_min_exact", 1.5, "check_min_exact must lie in [0, 1] (0: no check), got 1.5"),
    ("check_min_exact", -0.1, "check_min_exact must be a number >= 0, got -0.1"),
    ("check_rounds", -1, "check_rounds must be an int >= 0, got -1"),
    ("check_extra_steps", 0, "check_extra_steps must be an int >= 1, got 0"),
    ("check_rows", 0, "check_rows must be an int >= 1, got 0"),
])
def test_check_fields_are_validated_in_one_line(field, value, message):
    with pytest.raises(ValueError) as e:
        SFTSection(**{field: value})
    assert str(e.value) == message


def test_the_check_needs_a_threshold_and_a_first_phase():
    assert SFTSection(check_min_exact=0.5, first_phase_steps=10).checks
    assert not SFTSection(check_min_exact=0.0, first_phase_steps=10).checks
    assert not SFTSection(check_min_exact=0.5, first_phase_steps=0).checks


CHECK_FIELDS = ("check_min_exact", "check_rows", "check_extra_steps", "check_rounds")


def test_a_record_from_before_the_check_resumes_without_it(tmp_path):
    from mtrl.training.config import base_config, config_record
    from mtrl.training.config.migrate import normalize
    from mtrl.training.run.run_config import check_resumable, write_config
    now = config_record(base_config())
    old = json.loads(json.dumps(now))
    for field in CHECK_FIELDS:
        del old["sft"][field]
    write_config(tmp_path, old)
    (tmp_path / "sft_checkpoints" / "3").mkdir(parents=True)  # progress to resume from
    check_resumable(tmp_path, now, normalize=normalize)  # the run had no check: the default
    with pytest.raises(ValueError, match=r"^config\.sft\.check_"):
        check_resumable(tmp_path, now)  # without the migration the fields differ
    checked = json.loads(json.dumps(now))
    checked["sft"]["check_min_exact"] = 0.2  # a check it never ran: another experiment
    with pytest.raises(ValueError, match=r"^config\.sft\.check_min_exact is 0\.2 but the run "
                                         r"in .* used 0\.0"):
        check_resumable(tmp_path, checked, normalize=normalize)


def test_the_default_checks_and_its_smoke_run_does_not():
    from mtrl.training.config import apply_smoke, module_from_file
    from tests.training.kill_resume import ROOT
    configs = ROOT / "experiments" / "configs"
    c = module_from_file(configs / "default.py").get_config()
    assert c.sft.check_min_exact > 0 and c.sft.first_phase_steps > 0
    assert module_from_file(configs / "default_narrow_k.py").get_config().sft.check_min_exact == 0
    apply_smoke(c)
    assert c.sft.check_min_exact == 0.0


def test_the_trainer_stops_before_rl_with_the_checks_line(tmp_path):
    """The command line: a warm start that fails its check ends the run in one line
    `error: SFT warm start failed its check: ...`, with no RL step."""
    from tests.training.kill_resume import TINY_CONFIG_HEAD, run_cli
    config = tmp_path / "checked.py"
    config.write_text(TINY_CONFIG_HEAD + '''    c.train.steps = 2
    c.sft.steps = 3
    c.sft.first_phase_steps = 2
    c.sft.batch_size = 4
    c.sft.revision_fraction = 0.0
    c.sft.check_min_exact = 1.0  # two updates from random reproduce no held-out row
    c.sft.check_rounds = 0
    return c
''')
    done = run_cli(config, tmp_path / "run")
    assert done.returncode == 1, done.stdout[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("error: SFT warm start failed its check: agent 0's greedy decoding "
                           "reproduces 0.000 of 2 held-out 'first_turn' demonstrations after 2 "
                           "SFT updates (first phase) (0 continuation(s))"), last
    assert not (tmp_path / "run" / "metrics.jsonl").exists() or "heldout_success" not in \
        (tmp_path / "run" / "metrics.jsonl").read_text()
