"""The environment protocol the trajectory generator drives (docs/design.md section 1),
kept beside it: environments (mtrl/envs) implement it and import it from here.

An environment is host-side and batched. For each task it produces the agents'
first prompts; then, for a batch of branches, it scores one joint action per
branch (the N agents' decoded completions) and returns the immediate reward, the
reward components, diagnostics and each agent's next-turn observation text.

Branch state is an immutable value owned by the environment (for code tasks: the
task and the branch's previous responses and verdicts). Children share their
parent's state object, so branching costs nothing on the host.

Episode ends (`StepResult.ended`, docs/methods.md "Episode ends"): a step that ends its
episode (math: a correct answer; tool: an answer or the last allowed turn; TextWorld:
won, lost or out of moves; code: all tests passed when `end_on_success`) says so, and
the generator plays no later turn on that branch. This is the one rule: the step that
ends an episode is its path's last step, so every estimator, filter, curriculum and
reward recipe reads the outcome there, and no text written after the end is
generated, rewarded or trained. Whether a correct step ends the episode is the
environment's registered trait (envs/registry.py `ends_on_success`, read by the config
rules before anything is built: UFO's "first success" needs it).

History modes (`full` or `last`): with `full`, the generator appends the agent's
response and the observation to the branch's token history (append-only, so the
parent's KV cache is extended); with `last`, `StepResult.reset_context` is true and
the observation is a complete fresh prompt (task, last response, feedback), which
the generator prefills anew.
"""

from __future__ import annotations

import abc
import concurrent.futures
import dataclasses
from typing import Any, Mapping, Sequence


# UFO's unary observation (Liu et al. 2025): says an attempt failed and nothing else.
RETRY_MESSAGE = "Try again."


class EnvironmentFailure(RuntimeError):
    """An environment could not score a step (an external server that stopped
    answering, a malformed reply): the message says which and why. Raised instead of
    a made-up reward; mtrl/train.py ends the run with it in one line."""


@dataclasses.dataclass(frozen=True)
class StepResult:
    reward: float  # immediate reward of this joint action
    done: bool  # this step solved the task (evaluation counts it as success)
    observations: tuple[str, ...]  # per agent: next turn's user message
    state: Any  # the child branch's state
    components: Mapping[str, float] = dataclasses.field(default_factory=dict)
    info: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    reset_context: bool = False  # history mode `last`: observation is a whole prompt
    ended: bool = False  # this step ended the episode: the branch gets no later turn


class Environment(abc.ABC):
    """Batched, host-side environment for N cooperating agents."""

    num_agents: int
    # StepResult.info keys reported on every step, which credit estimators may read
    # (docs/methods.md: e.g. anchor_id for GiGPO, answer_logprob for IGPO).
    info_keys: frozenset = frozenset()

    @abc.abstractmethod
    def reset(self, task: Any) -> tuple[Any, tuple[str, ...]]:
        """Initial branch state and each agent's first prompt for `task`."""

    @abc.abstractmethod
    def step(self, states: Sequence[Any], actions: Sequence[tuple[str, ...]],
             turn: int) -> list[StepResult]:
        """Scores one joint action per branch; `turn` is 1-based.

        states[i] is branch i's state, actions[i] the N agents' completions (text).
        """

    def retry_observations(self, result: StepResult) -> tuple[str, ...] | None:
        """Each agent's next-turn observation after `result` had the environment
        answered with the content-free RETRY_MESSAGE instead of its feedback (the
        evaluation's feedback-use measure, mtrl/training/evaluate/feedback_gain.py).

        Here: the message replaces the observation, which is right when the
        observation is appended to a history that already holds the task. An
        environment whose observation is a whole prompt (`reset_context`) overrides
        this to keep what that prompt restates of the task; one that does not
        returns None, and has no feedback-use measure."""
        return None if result.reset_context else (RETRY_MESSAGE,) * self.num_agents

    def step_async(self, states: Sequence[Any], actions: Sequence[tuple[str, ...]],
                   turn: int) -> concurrent.futures.Future:
        """Starts `step` in the background so device work can overlap it."""
        return _background().submit(self.step, list(states), list(actions), turn)

    def close(self) -> None:
        """Releases processes or connections held by the environment."""


_EXECUTOR: concurrent.futures.ThreadPoolExecutor | None = None


def _background() -> concurrent.futures.ThreadPoolExecutor:
    global _EXECUTOR
    if _EXECUTOR is None:
        _EXECUTOR = concurrent.futures.ThreadPoolExecutor(
            max_workers=2, thread_name_prefix="mtrl-env")
    return _EXECUTOR
