"""The guessing environment (mtrl/envs/guess/): verdicts computed by hand, no text that
names the secret, success within T turns, a binary search that always wins within
⌈log2(n + 1)⌉ turns and a fixed guess that mostly loses."""

import math
import re
import types

import pytest

from mtrl.data.guess_tasks import GuessSpace, bisect_guesses, candidates
from mtrl.envs.guess import GuessEnv, GuessTask, read_guess
from mtrl.envs.math import MathTask
from mtrl.envs.registry import EnvSection, build_environment

TASK = GuessTask("guess/x/16_41_30", 16, 41, 30)
QUESTION = "Guess my secret integer. It is greater than 16 and less than 41."


def play(env, task, replies):
    """Steps `task` on `replies` (one per turn) until it ends; the results."""
    state, _ = env.reset(task)
    results = []
    for turn, reply in enumerate(replies, start=1):
        result, = env.step([state], [(reply,) * env.num_agents], turn)
        results.append(result)
        if result.ended:
            break
        state = result.state
    return results


def test_first_prompt_and_verdicts_by_hand():
    env = GuessEnv()
    state, prompts = env.reset(TASK)
    assert prompts == (QUESTION,) and TASK.prompt == QUESTION and TASK.candidates == 24
    replies = ["28", "35", "I guess 29, no, 31", "16", "41", "-3", "abc", "2.5", "1/3",
               "\\boxed{40} is my guess"]
    results = env.step([state] * len(replies), [(r,) for r in replies], turn=1)
    assert [r.observations[0] for r in results] == [
        f"28 is too low. {QUESTION}", f"35 is too high. {QUESTION}",
        f"31 is too high. {QUESTION}",  # the last number, as the math reader takes it
        f"16 is out of range. {QUESTION}", f"41 is out of range. {QUESTION}",
        f"-3 is out of range. {QUESTION}",
        *[f"No integer was found in your answer. {QUESTION}"] * 3,
        f"40 is too high. {QUESTION}"]
    assert not any(r.ended or r.done or r.reward for r in results)
    assert [r.info["void"] for r in results[-4:-1]] == [(True,)] * 3
    right, = env.step([state], [("It is 30.",)], turn=1)
    assert right.ended and right.done and right.reward == 1.0
    assert right.observations == ("Correct.",) and right.info["correct"]
    assert right.info["truth"] == "30" and right.state.guesses == (30,)


def test_read_guess_takes_integers_only():
    assert [read_guess(t) for t in ("12", "x = 007", "#### 5", "2.0", "2.5", "", "1,000")] \
        == [12, 7, 5, 2, None, None, 1000]


def test_the_team_guess_is_the_plurality_and_every_agent_hears_its_verdict():
    env = GuessEnv(num_agents=3)
    state, prompts = env.reset(TASK)
    assert prompts == (QUESTION,) * 3
    tie, majority = env.step([state] * 2, [("20", "35", "nothing"), ("30", "20", "20")], 1)
    assert tie.info["team_guess"] == 35  # a tie goes to the highest-numbered agent
    assert tie.observations == (f"35 is too high. {QUESTION}",) * 3
    assert majority.info["team_guess"] == 20 and not majority.ended  # one right agent


@pytest.mark.parametrize("task", [TASK, GuessTask("t", 0, 9, 1), GuessTask("t", 90, 124, 123)])
def test_no_observation_names_the_secret(task):
    env = GuessEnv()
    state, (prompt,) = env.reset(task)
    replies = [str(g) for g in range(task.low - 5, task.high + 6)] + ["none", "0.5"]
    texts = [prompt] + [r.observations[0] for r in
                        env.step([state] * len(replies), [(r,) for r in replies], 1)]
    for text in texts:
        if text != "Correct.":
            assert str(task.secret) not in re.findall(r"-?\d+", text), text


def test_the_verdict_does_not_depend_on_the_turn_or_the_history():
    env = GuessEnv()
    early = play(env, TASK, ["20", "38"])[-1].observations
    late = play(env, TASK, ["35", "33", "25", "38"])[-1].observations
    assert early == late == (f"38 is too high. {QUESTION}",)


def test_success_within_t_turns_and_no_turn_after_it():
    env = GuessEnv()
    results = play(env, TASK, ["20", "35", "30", "30"])
    assert [r.reward for r in results] == [0.0, 0.0, 1.0]  # ended at turn 3
    with pytest.raises(ValueError, match="episode has ended"):
        env.step([results[-1].state], [("30",)], 4)


def test_binary_search_finds_every_task_within_log2_turns_and_a_fixed_guess_mostly_fails():
    """Every task of the default space (lower bounds 0-99, 8-32 candidates): the teacher
    (the midpoint of what the verdicts leave) wins within ⌈log2(n + 1)⌉ <= 6 turns
    through the environment; a guess that ignores the verdicts (the first midpoint,
    every turn) wins only when the secret is that midpoint."""
    env = GuessEnv()
    space = GuessSpace()
    tasks = [GuessTask("t", lo, hi, s) for lo, hi, s in
             candidates(space, space.low_values, lambda s: True)[::7]]
    fixed_wins = 0
    for task in tasks:
        turns = math.ceil(math.log2(task.candidates + 1))
        assert turns <= 6
        results = play(env, task, [str(g) for g in bisect_guesses(task)])
        assert results[-1].reward == 1.0 and len(results) <= turns, task
        fixed = play(env, task, [str((task.low + task.high) // 2)] * 6)
        fixed_wins += fixed[-1].reward
    assert fixed_wins / len(tasks) < 0.1


def test_bisect_guesses_by_hand():
    assert bisect_guesses(TASK) == [28, 34, 31, 29, 30]  # (16, 41) -> (28, 41) -> ...
    assert bisect_guesses(GuessTask("t", 0, 4, 2)) == [2]


def test_the_registry_builds_it_for_the_guess_suite_only():
    from mtrl.data.suite import DataConfig, build_suite
    suite = build_suite(DataConfig(name="guess", num_train=4, num_eval=2, num_test=2), 0)
    built = build_environment(EnvSection.of("guess", 1, max_completion_chars=64), 6, "guess",
                              suite, None)
    assert isinstance(built.env, GuessEnv) and built.env.max_completion_chars == 64
    arith = types.SimpleNamespace(task_type=MathTask)
    with pytest.raises(ValueError, match="env 'guess' plays GuessTask tasks, but suite "
                                         "'arith' has MathTask tasks"):
        build_environment(EnvSection.of("guess", 1), 6, "arith", arith, None)


def test_bad_tasks_and_options_are_one_line_errors():
    with pytest.raises(ValueError, match="strictly between low and high"):
        GuessTask("t", 3, 9, 9)
    with pytest.raises(ValueError, match="low must be an int"):
        GuessTask("t", 1.5, 9, 4)
    with pytest.raises(ValueError, match="num_agents must be an int >= 1"):
        GuessEnv(num_agents=0)
    with pytest.raises(ValueError, match="max_completion_chars"):
        EnvSection.of("guess", 1, max_completion_chars=0)
