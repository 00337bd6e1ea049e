"""Held-out evaluation over scripted chains with known solve turns."""

import jax
import numpy as np

from mtrl.rollout.environment import StepResult
from mtrl.rollout import RolloutConfig
from mtrl.training.evaluate.evaluation import chain_success, evaluate
from tests.rollout.scripted import CharTokenizer, ScriptedBackend, ScriptedEnv


class SolveAtTurn(ScriptedEnv):
    """Task p is solved from turn solve_turn[p] on (0 = never)."""

    def __init__(self, solve_turn):
        super().__init__(1)
        self.solve_turn = solve_turn

    def step(self, states, actions, turn):
        out = super().step(states, actions, turn)
        fixed = []
        for (task, _), r in zip(states, out):
            done = 0 < self.solve_turn[task] <= turn
            fixed.append(StepResult(reward=float(done), done=done, observations=r.observations,
                                    state=r.state, components={"pass_rate": float(done)}))
        return fixed


def test_success_by_turn_and_pass_at_k():
    solve_turn = {0: 1, 1: 2, 2: 0, 3: 3}
    config = RolloutConfig(num_turns=3, num_generations=4, num_agents=1, max_new_tokens=16,
                           max_context=4096)
    result = evaluate([0, 1, 2, 3], SolveAtTurn(solve_turn), ScriptedBackend(), CharTokenizer(),
                      config, jax.random.key(0), sampled_backend=ScriptedBackend(),
                      num_samples=3)
    m = result.metrics
    assert m["heldout_success_turn1"] == 0.25
    assert m["heldout_success_turn2"] == 0.5
    assert m["heldout_success_turn3"] == m["heldout_success"] == 0.75
    assert m["heldout_mean_turns_to_success"] == 2.0  # (1 + 2 + 3) / 3
    assert m["heldout_reward_turn1"] == 0.25
    assert m["heldout_pass@3"] == 0.75 and m["heldout_sampled_success"] == 0.75
    assert len(result.transcripts) == 2 and "turn 1" in result.transcripts[0]


def test_chain_success_is_cumulative():
    config = RolloutConfig(num_turns=2, num_generations=1, num_agents=1, max_new_tokens=16,
                           max_context=4096)
    from mtrl.rollout import rollout
    tree = rollout([0, 1], SolveAtTurn({0: 1, 1: 0}), ScriptedBackend(), CharTokenizer(), config,
                   jax.random.key(0))
    np.testing.assert_array_equal(chain_success(tree), [[True, True], [False, False]])


class SolvedOnlyAt(SolveAtTurn):
    """Task p is solved at turn solve_turn[p] alone: the next revision breaks it."""

    def step(self, states, actions, turn):
        out = super().step(states, actions, turn)
        return [StepResult(reward=float(done), done=done, observations=r.observations,
                           state=r.state, components=r.components)
                for (task, _), r in zip(states, out)
                for done in [self.solve_turn[task] == turn]]


def test_final_turn_success_beside_any_turn_success_with_a_prefix():
    config = RolloutConfig(num_turns=2, num_generations=1, num_agents=1, max_new_tokens=16,
                           max_context=4096)
    # Task 0 right at turn 1 then broken, task 1 right at turn 2, task 2 never.
    result = evaluate([0, 1, 2], SolvedOnlyAt({0: 1, 1: 2, 2: 0}), ScriptedBackend(),
                      CharTokenizer(), config, jax.random.key(0), prefix="test")
    m = result.metrics
    assert m["test_success"] == m["test_success_turn2"] == 2 / 3
    assert m["test_success_turn1"] == 1 / 3
    assert m["test_final_turn_success"] == 1 / 3
    assert not any(k.startswith("heldout") for k in m)


class EndsAtSuccess(SolveAtTurn):
    """SolveAtTurn whose solving step ends the episode (StepResult.ended)."""

    def step(self, states, actions, turn):
        return [StepResult(reward=r.reward, done=r.done, observations=r.observations,
                           state=r.state, components=r.components, ended=r.done)
                for r in super().step(states, actions, turn)]


def test_episodes_that_end_early_are_judged_on_their_last_played_turn():
    config = RolloutConfig(num_turns=3, num_generations=1, num_agents=1, max_new_tokens=16,
                           max_context=4096)
    result = evaluate([0, 1, 2], EndsAtSuccess({0: 1, 1: 2, 2: 0}), ScriptedBackend(),
                      CharTokenizer(), config, jax.random.key(0))
    m = result.metrics
    assert [m[f"heldout_success_turn{t}"] for t in (1, 2, 3)] == [1 / 3, 2 / 3, 2 / 3]
    # Tasks 0 and 1 ended solved at turns 1 and 2; task 2 played all three turns.
    assert m["heldout_final_turn_success"] == m["heldout_success"] == 2 / 3
