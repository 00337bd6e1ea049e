"""The guess suite (mtrl/data/guess_suite.py): held-out splits that own their lower
bounds and their secrets, no agent-visible validation or test text that occurs in
training (the standard of tests/data/synthetic/test_default_disjoint.py, rendered
through the real guessing environment and the run's chat template), and the
binary-search teacher's demonstrations."""

import re

import pytest

from mtrl.data.demonstrations import Revision
from mtrl.data.guess_tasks import bisect_guesses
from mtrl.data.overlap import overlap, visible_texts
from mtrl.data.suite import DataConfig, build_suite
from mtrl.envs.guess import GuessEnv
from mtrl.training.config import module_from_file
from mtrl.training.run.sections import SFTSection
from tests.tokenizers.chatml import build_chatml_tokenizer

CONFIG = "experiments/configs/smollm2_guess.py"
HELD_OUT = ("validation", "test")
VOID = ["I do not know.", "2.5", "1/3"]


def suite_of(c):
    d = c.data
    return build_suite(DataConfig(name=d.name, train_split=d.train_split,
                                  eval_split=d.eval_split, test_split=d.test_split,
                                  num_train=d.num_train, num_eval=d.num_eval,
                                  num_test=d.num_test, options=dict(d.options)), seed=0)


@pytest.fixture(scope="module")
def setup():
    c = module_from_file(CONFIG).get_config()
    return c, suite_of(c), GuessEnv(c.env.num_agents)


def every_guess(task):
    """Every integer from two below the lower bound to two above the upper one (any
    other number reads "out of range" with its own digits), and replies without one."""
    return [(str(g),) for g in range(task.low - 2, task.high + 3)] + [(v,) for v in VOID]


def teacher_and_neighbours(task):
    guesses = bisect_guesses(task)
    return [(str(g + d),) for g in guesses for d in (-1, 0, 1)] + [(VOID[0],)]


def answers(task):
    return (task.answer,)


def question(env, task):
    return env.reset(task)[1][0]


def test_config_plays_guess_over_six_turns(setup):
    c, suite, _ = setup
    assert (c.data.name, c.env.name, c.rollout.num_turns) == ("guess", "guess", 6)
    assert [len(suite.tasks(s)) for s in ("train", *HELD_OUT)] == [4000, 64, 128]
    assert all(8 <= t.candidates <= 32 for s in ("train", *HELD_OUT) for t in suite.tasks(s))


def test_held_out_splits_own_their_bounds_and_their_secrets(setup):
    _, suite, _ = setup
    lows = {s: {t.low for t in suite.tasks(s)} for s in ("train", *HELD_OUT)}
    secrets = {s: {t.secret for t in suite.tasks(s)} for s in ("train", *HELD_OUT)}
    for split in HELD_OUT:
        assert not lows[split] & lows["train"] and not secrets[split] & secrets["train"]
    assert not lows["validation"] & lows["test"]
    assert not secrets["validation"] & secrets["test"]
    # No held-out range is a train range, so no held-out answer is a train answer for it.
    ranges = {s: {(t.low, t.high) for t in suite.tasks(s)} for s in ("train", *HELD_OUT)}
    assert not (ranges["validation"] | ranges["test"]) & ranges["train"]


def test_no_held_out_input_occurs_in_training(setup):
    """Held-out: every first prompt and the observation after every guess near the
    range and every reply without an integer. Training: every train task's prompt and
    its observations after the teacher's guesses and their neighbours, and every text
    of every SFT demonstration. Complete for any reply: an observation is a verdict
    then its own task's question (asserted for each rendered one), observations do
    not depend on the turn (tests/envs/guess), and no held-out question is a train one."""
    c, suite, env = setup
    train = visible_texts(env, suite.tasks("train"), teacher_and_neighbours, answers)
    train_questions = {question(env, t) for t in suite.tasks("train")}
    assert set(train[(0, 1)]) == train_questions
    sft = SFTSection(fraction=1.0, revision_fraction=1.0)
    for prompt, guess in suite.demonstrations(env, 1, sft)[0]:
        shown = [prompt] if isinstance(prompt, str) else \
            [prompt.prompt, *(obs for _, obs in prompt.exchanges)]
        for text in shown:
            for turn in (1, 2):
                train.setdefault((0, turn), {}).setdefault(text, set()).add(guess)
    for text in {t for key in train for t in train[key]}:
        assert text.endswith(tuple(train_questions)), text  # demonstrations: train only
    tokenizer = build_chatml_tokenizer()

    def chat(text):
        return tokenizer.apply_chat_template(
            [{"role": "system", "content": c.chat.system_prompts[0]},
             {"role": "user", "content": text}], tokenize=False)
    train_chats = {chat(t) for key in train for t in train[key]}
    for split in HELD_OUT:
        tasks = suite.tasks(split)
        heldout = visible_texts(env, tasks, every_guess, answers)
        found = overlap(train, heldout)
        assert found.total[(0, 2)] > 20 * len(tasks), split
        assert not found.any_seen, (split, found.examples)
        questions = {question(env, t) for t in tasks}
        assert not questions & train_questions
        for task in tasks:
            state, _ = env.reset(task)
            for result in env.step([state] * len(every_guess(task)), every_guess(task), 1):
                text = result.observations[0]
                if not result.ended:
                    assert text.endswith(question(env, task))
                    assert str(task.secret) not in re.findall(r"-?\d+", text)
        assert not {chat(t) for key in heldout for t in heldout[key]} & train_chats, split


def test_the_teachers_rows_are_its_search_through_the_environment(setup):
    """With every turn demonstrated: per train task, in order, its binary search, each
    later turn a Revision holding the earlier guesses with the environment's verdicts."""
    _, suite, env = setup
    rows = suite.demonstrations(env, 1, SFTSection(fraction=1.0, revision_fraction=1.0))[0]
    tasks = suite.tasks("train")
    assert len(rows) == sum(len(bisect_guesses(t)) for t in tasks)
    at = 0
    for task in tasks:
        guesses = [str(g) for g in bisect_guesses(task)]
        played, at = rows[at:at + len(guesses)], at + len(guesses)
        assert [g for _, g in played] == guesses and guesses[-1] == task.answer
        assert played[0][0] == question(env, task)
        state, _ = env.reset(task)
        for turn, (prompt, _) in enumerate(played[1:], start=1):
            result, = env.step([state], [(guesses[turn - 1],)], turn)
            state = result.state
            assert isinstance(prompt, Revision) and not prompt.reset
            assert prompt.prompt == question(env, task)
            assert prompt.exchanges[-1] == (guesses[turn - 1], result.observations[0])
            assert [g for g, _ in prompt.exchanges] == guesses[:turn]


def test_sft_fractions_and_the_weak_teacher(setup):
    _, suite, env = setup
    first_only = suite.demonstrations(env, 1, SFTSection(fraction=1.0, revision_fraction=0.0))
    assert len(first_only[0]) == 4000
    assert all(isinstance(p, str) for p, _ in first_only[0])
    sft = SFTSection(fraction=0.5, revision_fraction=(0.0, 1.0), resubmit_fraction=(0.0, 1.0))
    lazy = suite.demonstrations(GuessEnv(2), 2, sft)
    assert all(isinstance(p, str) for p, _ in lazy[0]) and 1800 < len(lazy[0]) < 2200
    later = [(p, g) for p, g in lazy[1] if isinstance(p, Revision)]
    assert later and all(g == p.exchanges[-1][0] for p, g in later)  # resubmits


def test_splits_come_from_the_options_seed_not_the_runs():
    data = DataConfig(name="guess", test_split="test", num_train=20, num_eval=5, num_test=5,
                      options={"lows": [10, 40], "widths": [4, 12], "seed": 3})
    suite = build_suite(data, seed=0)
    assert build_suite(data, seed=9).tasks("test") == suite.tasks("test")
    other = build_suite(DataConfig(**{**data.__dict__, "options": {"seed": 4}}), seed=0)
    assert other.tasks("test") != suite.tasks("test")
    assert all(10 <= t.low <= 40 and 4 <= t.candidates <= 12 for t in suite.tasks("train"))
    no_test = build_suite(DataConfig(**{**data.__dict__, "test_split": ""}), seed=0)
    assert no_test.tasks("test") == [] and no_test.tasks("validation") == suite.tasks("validation")


def test_bad_options_are_one_line_errors():
    def build(num_test=2, path="", **options):
        return build_suite(DataConfig(name="guess", test_split="test", path=path,
                                      num_test=num_test, num_eval=2, options=options),
                           seed=0).tasks("test")
    cases = [(dict(digits=2), r"unknown \['digits'\] for guess"),
             (dict(seed=-1), "seed: an int >= 0"),
             (dict(widths=(0, 5)), r"widths: two ints \(first, last\), first <= last of "
                                   "at least 1, got"),
             (dict(lows=(9, 3)), r"lows: two ints \(first, last\), first <= last, got"),
             (dict(num_test=10_000), "test asks for 10000 tasks but the held-out"),
             (dict(path="x"), "data.path: guess tasks are generated")]
    for options, message in cases:
        with pytest.raises(ValueError, match=message) as error:
            build(**options)
        assert "\n" not in str(error.value)
    suite = build_suite(DataConfig(name="guess"), seed=0)
    with pytest.raises(ValueError, match="first_guess: guess has no first guess"):
        suite.check_sft(SFTSection(first_guess="2x"), 1)
    with pytest.raises(ValueError, match="revision_fraction: env.num_agents=1 needs"):
        suite.check_sft(SFTSection(revision_fraction=(0.1, 0.2)), 1)
