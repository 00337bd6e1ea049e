"""MathEnv on hand-made transcripts: rewards, the four feedback modes, episode end,
N agents, history mode `last`, and malformed completions (never a crash)."""

import pytest

from mtrl.data.gsm8k import MathTask
from mtrl.envs.math import MathEnv, MathEnvConfig, team_answer

TASK = MathTask("gsm8k/t/0", "Tom has 3 apples and buys 4 more. How many?", "7")


def play(env, texts_per_turn):
    """Plays one branch; texts_per_turn[t] is the joint action of turn t+1."""
    state, first = env.reset(TASK)
    out = []
    for turn, action in enumerate(texts_per_turn, start=1):
        (result,) = env.step([state], [tuple(action)], turn)
        out.append(result)
        state = result.state
    return first, out


def test_first_prompt_asks_for_a_boxed_answer():
    _, prompts = MathEnv().reset(TASK)
    assert len(prompts) == 1 and TASK.question in prompts[0] and "\\boxed{n}" in prompts[0]


def test_unary_feedback_is_the_fixed_message_and_the_episode_ends_when_correct():
    env = MathEnv(MathEnvConfig(feedback_mode="unary"))
    _, (r1, r2) = play(env, [["It is \\boxed{12}."], ["3 + 4 = 7\n#### 7"]])
    assert (r1.reward, r1.done, r1.ended, r1.observations) == (0.0, False, False,
                                                              ("Try again.",))
    assert r1.info["correct"] is False and r1.info["answers"] == ("12",)
    assert (r2.reward, r2.done, r2.ended) == (1.0, True, True) and r2.info["correct"]
    # The episode is over: no later turn may be played on the branch.
    with pytest.raises(ValueError, match="ended"):
        env.step([r2.state], [("\\boxed{9}",)], 3)
    assert r1.info["answer_id"] != r2.info["answer_id"]
    assert r1.info["truth"] == "7"


def test_correctness_feedback_names_the_extracted_answer():
    env = MathEnv(MathEnvConfig(feedback_mode="correctness"))
    _, (r1, r2) = play(env, [["the answer is 1,200"], ["I don't know"]])
    assert r1.observations == ("Incorrect. Your final answer was read as 1200.",)
    assert "No final answer was found" in r2.observations[0]
    assert r2.info["void"] == (True,) and r1.info["void"] == (False,)


def test_plain_feedback_only_asks_to_revise():
    env = MathEnv(MathEnvConfig(feedback_mode="plain"))
    _, (r1,) = play(env, [["\\boxed{8}"]])
    assert "8" not in r1.observations[0] and "Review your solution" in r1.observations[0]


def test_direction_feedback_tells_the_side_of_the_truth_and_repeats_the_question():
    env = MathEnv(MathEnvConfig(feedback_mode="direction"))
    q = TASK.question
    _, (r1, r2, r3, r4) = play(env, [["\\boxed{12}"], ["it is 6.5"], ["3/4"], ["no idea"]])
    assert r1.observations == (f"12 is too high. {q}",)
    assert r2.observations == (f"6.5 is too low. {q}",)  # decimals compare by value
    assert r3.observations == (f"0.75 is too low. {q}",)
    assert r4.observations == (f"No number was found in your answer. {q}",)
    _, (r,) = play(env, [["-8"]])
    assert r.observations == (f"-8 is too low. {q}",)
    _, (right,) = play(env, [["7"]])
    assert right.ended and right.observations == ("Correct. The problem is solved.",)


def test_history_mode_last_sends_a_whole_prompt_with_the_previous_response():
    env = MathEnv(MathEnvConfig(feedback_mode="correctness", history_mode="last"))
    _, (r1,) = play(env, [["my answer: \\boxed{8}"]])
    assert r1.reset_context
    text = r1.observations[0]
    assert TASK.question in text and "my answer: \\boxed{8}" in text and "read as 8" in text


def test_two_agents_vote_and_see_each_others_answers():
    env = MathEnv(MathEnvConfig(num_agents=2, feedback_mode="correctness"))
    first, (r1,) = play(env, [["\\boxed{7}", "\\boxed{6}"]])
    assert "agent 1 of 2" in first[0] and "agent 2 of 2" in first[1]
    # A tie goes to the last agent (6): wrong.
    assert r1.reward == 0.0 and r1.info["team_answer"] == "6"
    assert "agent 2: 6" in r1.observations[0] and "agent 1: 7" in r1.observations[1]
    _, (r2,) = play(env, [["\\boxed{7}", "it is 7"]])
    assert r2.reward == 1.0 and r2.components["answered"] == 1.0


def test_team_answer():
    assert team_answer(["3", "4", "3"]) == "3"
    assert team_answer(["3", "4"]) == "4"
    assert team_answer([None, "5", None]) == "5"
    assert team_answer([None, None]) is None


@pytest.mark.parametrize("completion", [
    "",  # empty
    "\x00\x01\xff\xfe" * 100,  # binary garbage (decoded bytes)
    "9" * 100_000,  # 100 KB
    b"\xff\xfe\xfa invalid utf-8 \\boxed{7}",  # raw invalid UTF-8 bytes
    "\\boxed{" * 5000,  # deeply unbalanced
])
def test_malformed_completions_get_a_clear_observation_and_no_reward(completion):
    env = MathEnv(MathEnvConfig(feedback_mode="correctness"))
    state, _ = env.reset(TASK)
    (result,) = env.step([state], [(completion,)], 1)
    if isinstance(completion, bytes):  # the answer after the garbage still counts
        assert result.reward == 1.0
        return
    assert result.reward == 0.0 and not result.done
    assert result.observations[0].startswith("Incorrect.")
    assert len(result.observations[0]) < 300


def test_bad_config_and_batch_are_one_line_errors():
    with pytest.raises(ValueError, match="feedback_mode"):
        MathEnvConfig(feedback_mode="level_feedback")
    with pytest.raises(ValueError, match="num_agents"):
        MathEnvConfig(num_agents=0)
    env = MathEnv()
    state, _ = env.reset(TASK)
    with pytest.raises(ValueError, match="cannot play turn 2"):
        env.step([state], [("1",)], 2)
    with pytest.raises(TypeError):
        env.reset("not a task")
