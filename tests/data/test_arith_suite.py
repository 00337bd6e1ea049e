"""The arith suite (mtrl/data/arith_suite.py): splits that own operand sets, and no
agent-visible validation or test input that occurs in training (the standard of
tests/data/synthetic/test_default_disjoint.py): every first prompt, every turn-2
observation the real math environment answers any first attempt with, and every SFT
demonstration prompt, rendered through the environment and the run's chat template."""

import itertools

import pytest

from mtrl.data.arith_suite import KINDS, ArithSuite, operand_sets
from mtrl.data.suite import DataConfig, build_suite
from mtrl.envs.math import MathEnv, MathEnvConfig
from mtrl.training.config import module_from_file
from mtrl.training.run.sections import SFTSection
from tests.tokenizers.chatml import build_chatml_tokenizer

CONFIG = "experiments/configs/smollm2_arith.py"
HELD_OUT = ("validation", "test")


def experiment():
    return module_from_file(CONFIG).get_config()


def suite_of(c) -> ArithSuite:
    d = c.data
    return build_suite(DataConfig(name=d.name, train_split=d.train_split,
                                  eval_split=d.eval_split, test_split=d.test_split,
                                  num_train=d.num_train, num_eval=d.num_eval,
                                  num_test=d.num_test, options=dict(d.options)), seed=0)


def env_of(c, suite) -> MathEnv:
    return MathEnv(MathEnvConfig(num_agents=c.env.num_agents,
                                 feedback_mode=c.env.feedback_mode,
                                 history_mode=c.env.history_mode,
                                 templates=suite.templates(c.env.templates)))


def first_attempts(task):
    """First replies: every integer from -20 to 220 (add2's sums are 20-198; a number
    outside reads the same way with its own digits, its side of the truth fixed), a
    fraction, a decimal and a reply with no number."""
    return [*(str(n) for n in range(-20, 221)), "1/3", "150.5", "I do not know."]


def rendered(env, tasks, attempts=first_attempts):
    """{first prompt} and {turn-2 observation after each attempt} of `tasks`, through
    the environment (reset, then step on a turn-1 reply)."""
    prompts, observations = set(), set()
    for task in tasks:
        state, (prompt,) = env.reset(task)
        prompts.add(prompt)
        replies = attempts(task)
        for result in env.step([state] * len(replies), [(r,) for r in replies], turn=1):
            if not result.ended:  # a right answer ends the episode: no turn 2
                observations.add(result.observations[0])
    return prompts, observations


def question_of(observation: str) -> str:
    """The question a turn-2 observation repeats after its verdict."""
    verdict, question = observation.split(". ", 1)
    assert "What is" not in verdict
    return question


@pytest.fixture(scope="module")
def setup():
    c = experiment()
    suite = suite_of(c)
    return c, suite, env_of(c, suite)


def test_config_plays_arith_with_direction_feedback(setup):
    c, suite, env = setup
    assert (c.data.name, c.env.name, c.env.feedback_mode) == ("arith", "math", "direction")
    assert (len(suite.tasks("validation")), len(suite.tasks("test"))) == (64, 128)
    task = suite.tasks("test")[0]
    state, (prompt,) = env.reset(task)
    assert prompt == task.question
    truth = int(task.answer)
    high, low, none = env.step([state] * 3, [(str(truth + 7),), (str(truth - 1),),
                                             ("no idea",)], turn=1)
    assert high.observations[0] == f"{truth + 7} is too high. {task.question}"
    assert low.observations[0] == f"{truth - 1} is too low. {task.question}"
    assert none.observations[0] == f"No number was found in your answer. {task.question}"
    right, = env.step([state], [(f"{truth}",)], turn=1)
    assert right.ended and right.reward == 1.0


def test_held_out_splits_own_their_operand_sets(setup):
    _, suite, _ = setup
    sets = {split: {frozenset(map(int, t.task_id.rsplit("/", 1)[1].split("_")))
                    for t in suite.tasks(split)} for split in ("train", *HELD_OUT)}
    for a, b in itertools.combinations(sets, 2):
        assert not sets[a] & sets[b], (a, b)
    assert len(sets["train"]) == len(suite.tasks("train")) == len(operand_sets(KINDS["add2"])) \
        - 64 - 128


def test_no_held_out_input_occurs_in_training(setup):
    """Every agent-visible held-out text, rendered through the environment and the
    chat template: first prompts and turn-2 observations after every first attempt
    (first_attempts), against the train split's prompts, its SFT demonstration
    prompts and its turn-2 observations after the same attempts."""
    c, suite, env = setup
    train_prompts, _ = rendered(env, suite.tasks("train"), attempts=lambda t: [])
    demos = {prompt for prompt, _ in suite.demonstrations(env, 1, SFTSection())[0]}
    assert demos == train_prompts
    # Train observations after attempts around each truth and a reply with no number.
    # Completeness for any attempt: an observation is "<verdict>. <its question>"
    # (asserted for every rendered one), so two equal observations have equal
    # questions, and no held-out question is a train question.
    train_observations = set()
    for task in suite.tasks("train"):
        state, _ = env.reset(task)
        replies = [str(int(task.answer) + d) for d in (-30, -1, 1, 30)] + ["nothing"]
        for result in env.step([state] * 5, [(r,) for r in replies], turn=1):
            assert question_of(result.observations[0]) == task.question
            train_observations.add(result.observations[0])
    train_questions = {t.question for t in suite.tasks("train")}
    tokenizer = build_chatml_tokenizer()
    system = c.chat.system_prompts[0]

    def chat(text):
        return tokenizer.apply_chat_template(
            [{"role": "system", "content": system}, {"role": "user", "content": text}],
            tokenize=False)
    train_chats = {chat(p) for p in train_prompts | demos}
    for split in HELD_OUT:
        prompts, observations = rendered(env, suite.tasks(split))
        assert len(observations) > 240 * len(suite.tasks(split))
        assert not prompts & (train_prompts | demos | train_observations), split
        assert not observations & (train_prompts | demos | train_observations), split
        assert not {chat(p) for p in prompts} & train_chats, split
        questions = {t.question for t in suite.tasks(split)}
        assert not questions & train_questions
        assert {question_of(o) for o in observations} == questions


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_splits_disjointly_and_answers_right(kind):
    data = DataConfig(name="arith", train_split="train", eval_split="validation",
                      test_split="test", num_train=300, num_eval=20, num_test=30,
                      options={"kind": kind, "seed": 3})
    suite = build_suite(data, seed=0)
    questions = {s: {t.question for t in suite.tasks(s)} for s in ("train", *HELD_OUT)}
    assert [len(questions[s]) for s in ("train", *HELD_OUT)] == [300, 20, 30]
    for a, b in itertools.combinations(questions.values(), 2):
        assert not a & b
    for task in suite.tasks("test"):
        a, symbol, b = task.question.removeprefix("What is ").removesuffix("?").split()
        assert symbol == KINDS[kind].symbol
        assert int(task.answer) == KINDS[kind].apply(int(a), int(b))
    assert build_suite(data, seed=7).tasks("test") == suite.tasks("test")  # run seed


def test_bad_options_are_one_line_errors():
    def build(**options):
        return build_suite(DataConfig(name="arith", options=options), seed=0)
    with pytest.raises(ValueError,
                       match="kind must be one of add2, add3, mul1x2, sub2, got 'mul3'"):
        build(kind="mul3")
    with pytest.raises(ValueError, match="unknown \\['digits'\\]"):
        build(digits=2)
    with pytest.raises(ValueError, match="seed: an int >= 0"):
        build(seed=-1)
