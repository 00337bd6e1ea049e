"""An environment served over OpenEnv's protocol as a multi-turn mtrl environment
(`env.name = "openenv"`, one agent).

Each task is an episode's reset arguments (task.py; the `openenv` suite makes them
from seeds). The agent's first prompt is the reset observation as text; each turn
its completion becomes the action `{action_key: completion}`, and the server's reply
gives the immediate reward, the next observation (appended to the history) and
whether the episode is over (`ended`: the generator plays no later turn on that
branch). Success (`done`, what evaluation counts, and step info `correct`) is what
the server declares: a step whose metadata has `success` (true or false), else a step
whose reward reaches the `success_reward` of the reset's metadata; a server that
declares neither is judged by env.success_reward, a step whose reward reaches it, and
when none of the first SUCCESS_CHECK_STEPS step rewards (or none in the whole run, if
shorter) reaches it, one warning line says so with the highest reward seen (a server
with other rewards than env.success_reward assumes would otherwise never count a
success, silently). The reset observation is kept on its task (EpisodeTask.prompt) for
transcripts. Step info `anchor_id` is a hash of the
observation after the step, GiGPO's anchor state (steps from equal observations
group); `answer_id` a hash of the action (UFO's repeat penalty).

Branching. A tree rollout continues every branch of a node from the same state, but a
server session is one live episode that cannot be copied. So a branch's state is the
actions played so far and the replies they got, and each step plays the branch's
episode again from its reset on a fresh session: the earlier actions, then the new
one. The server must therefore reproduce an episode from its reset arguments (a seed)
and actions, as OpenEnv's seeded environments do; a replay whose replies differ from
the recorded ones is an error naming the step, not silently another episode. A branch
at turn t costs t server steps (T(T+1)/2 per path over T turns).

Failures (client.py): a slow or restarted server is retried, a malformed reply or
a server that stays away is ExternalEnvError (one line from mtrl/train.py); a reward
is never invented.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import threading
import zlib

from mtrl.config.fields import check_int, check_number
from mtrl.envs.base import TurnEnvironment
from mtrl.envs.openenv.client import EpisodeClient, ExternalEnvError, Reply
from mtrl.envs.openenv.task import EpisodeTask
from mtrl.rollout.environment import StepResult

SUCCESS_CHECK_STEPS = 64  # step rewards seen before an unreached success_reward is said


@dataclasses.dataclass(frozen=True)
class OpenEnvConfig:
    """The options of `env.name = "openenv"` (its env.* fields, envs/registry.py).

    url: the server (http://127.0.0.1:8000; "": unset, refused by the build). action_key: the action field that carries
    the completion ("": the only string field of the server's action schema, read
    from GET /schema). observation_key: the observation field shown to the agent ("":
    the only string field, else the whole observation as JSON). success_reward: a
    step with at least this reward solved the task, for a server that declares no
    success of its own (module doc). timeout_s, retries, concurrency:
    client.py. max_observation_chars: longer observations are cut (with a note)."""

    url: str = ""
    action_key: str = ""
    observation_key: str = ""
    success_reward: float = 1.0
    timeout_s: float = 30.0
    retries: int = 2
    concurrency: int = 1
    max_observation_chars: int = 2000

    def __post_init__(self):
        # "" (the default) is unset: the build refuses it, naming env.url.
        if not isinstance(self.url, str) or (self.url and not self.url.startswith(
                ("http://", "https://", "ws://", "wss://"))):
            raise ValueError(f"url must be the server's http://host:port, got {self.url!r}")
        for name in ("action_key", "observation_key"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        check_number("success_reward", self.success_reward, finite=True)
        check_number("timeout_s", self.timeout_s, above=0)
        check_int("retries", self.retries, 0)
        check_int("concurrency", self.concurrency, 1)
        check_int("max_observation_chars", self.max_observation_chars, 1)


@dataclasses.dataclass(frozen=True)
class EpisodeState:
    """A branch: its task, the actions played and the replies they got, and whether
    its episode is over (the server's done, or a success)."""

    task: EpisodeTask
    actions: tuple[dict, ...] = ()
    replies: tuple[Reply, ...] = ()
    ended: bool = False
    success_reward: float | None = None  # declared at the reset; None: the config's

    @property
    def turn(self) -> int:
        return len(self.actions)


class OpenEnvEnvironment(TurnEnvironment):
    num_agents = 1
    state_type = EpisodeState
    info_keys = frozenset({"anchor_id", "correct", "answer_id"})

    def __init__(self, config: OpenEnvConfig, action_key: str, tool_call: bool = False):
        self.config = config
        self.action_key = action_key  # the field, or TOOL.ARGUMENT with tool_call
        self.tool_call = tool_call
        self.client = EpisodeClient(config.url, timeout_s=config.timeout_s,
                                    retries=config.retries, concurrency=config.concurrency)
        # Steps judged by env.success_reward, the best reward among them, whether one
        # reached it, whether the warning was said (module doc).
        self._judged, self._best, self._reached, self._warned = 0, -math.inf, False, False
        self._check_lock = threading.Lock()

    def reset(self, task: EpisodeTask) -> tuple[EpisodeState, tuple[str, ...]]:
        if not isinstance(task, EpisodeTask):
            raise TypeError(f"OpenEnvEnvironment.reset expects an EpisodeTask, got "
                            f"{type(task).__name__}")
        ((first, _),) = self.client.play([(task.reset_kwargs, ())])
        if first.done:
            raise ExternalEnvError(f"openenv server {self.config.url}: the episode "
                                   f"{task.task_id} is over at its reset")
        declared = first.metadata.get("success_reward")
        if declared is not None and (isinstance(declared, bool) or not isinstance(
                declared, (int, float)) or not math.isfinite(declared)):
            raise ExternalEnvError(f"openenv server {self.config.url}: the reset of "
                                   f"{task.task_id} declares success_reward={declared!r}, "
                                   "not a finite number")
        text = self.text(first.observation, first.metadata)
        task.show(text)
        return EpisodeState(task, success_reward=None if declared is None
                            else float(declared)), (text,)

    def step_branches(self, states: list[EpisodeState], actions: list[tuple[str, ...]],
                      turn: int) -> list[StepResult]:
        moves = [self.move(action[0]) for action in actions]
        played = self.client.play([(s.task.reset_kwargs, s.actions + (m,))
                                   for s, m in zip(states, moves)])
        results = [self._result(state, move, replies)
                   for state, move, (_, replies) in zip(states, moves, played)]
        self._check_success_reward()
        return results

    def move(self, completion: str) -> dict:
        """The action that carries `completion`: {action_key: completion}, or with
        tool_call the call {"type": "call_tool", "tool_name": TOOL, "arguments":
        {ARGUMENT: completion}} (action_key "TOOL.ARGUMENT")."""
        if not self.tool_call:
            return {self.action_key: completion}
        tool, _, argument = self.action_key.partition(".")
        return {"type": "call_tool", "tool_name": tool, "arguments": {argument: completion}}

    def _result(self, state: EpisodeState, move: dict, replies: list[Reply]) -> StepResult:
        for number, (recorded, replayed) in enumerate(zip(state.replies, replies), 1):
            if recorded != replayed:
                raise ExternalEnvError(
                    f"openenv server {self.config.url}: replaying episode "
                    f"{state.task.task_id} gave another reply at step {number} than its "
                    "first play; the adapter replays episodes to branch them, so the "
                    "server must play the same episode for the same reset and actions")
        reply = replies[-1]
        correct = self._success(state, reply)
        observation = self.text(reply.observation, reply.metadata)
        child = EpisodeState(state.task, state.actions + (move,), state.replies + (reply,),
                             ended=reply.done or correct, success_reward=state.success_reward)
        action_text = (move["arguments"][self.action_key.partition(".")[2]]
                       if self.tool_call else move[self.action_key])
        return StepResult(
            reward=reply.reward, done=correct, observations=(observation,), state=child,
            components={"server_reward": reply.reward, "server_done": float(reply.done)},
            info={"anchor_id": zlib.crc32(json.dumps(reply.observation, sort_keys=True,
                                                     default=repr).encode()),
                  "correct": correct, "answer_id": zlib.crc32(action_text.encode()),
                  "server_done": reply.done},
            ended=reply.done or correct)

    def _success(self, state: EpisodeState, reply: Reply) -> bool:
        """The server's declaration, else env.success_reward (module doc)."""
        declared = reply.metadata.get("success")
        if declared is not None:
            if not isinstance(declared, bool):
                raise ExternalEnvError(f"openenv server {self.config.url}: a step of "
                                       f"{state.task.task_id} declares success="
                                       f"{declared!r}, not true or false")
            return declared
        if state.success_reward is not None:
            return reply.reward >= state.success_reward
        correct = reply.reward >= self.config.success_reward
        with self._check_lock:
            self._judged += 1
            self._best = max(self._best, reply.reward)
            self._reached = self._reached or correct
        return correct

    def _check_success_reward(self, final: bool = False) -> None:
        """One warning line when env.success_reward judged SUCCESS_CHECK_STEPS steps
        (or the whole run, `final`) and no reward reached it."""
        with self._check_lock:
            due = self._judged >= SUCCESS_CHECK_STEPS or (final and self._judged > 0)
            if self._warned or self._reached or not due:
                return
            self._warned = True
        print(f"warning: openenv server {self.config.url} declares no success and none "
              f"of its first {self._judged} step rewards (the highest {self._best:g}) "
              f"reaches env.success_reward={self.config.success_reward:g}: no step counts "
              "as a success until one does; set env.success_reward to the reward of a "
              "solved step", file=sys.stderr, flush=True)

    def text(self, observation: dict, metadata: dict | None = None) -> str:
        """What the agent reads of an observation (OpenEnvConfig.observation_key: a
        field, else one of the metadata's; unset, the only string field, else the
        metadata's chat `prompt` when the observation has no field of its own, else
        the whole observation as JSON)."""
        key, metadata = self.config.observation_key, metadata or {}
        if key:
            if key not in observation and key not in metadata:
                raise ExternalEnvError(f"openenv server {self.config.url}: the observation "
                                       f"has no field {key!r} (env.observation_key); "
                                       f"it has {sorted(observation)}, metadata "
                                       f"{sorted(metadata)}")
            value = observation[key] if key in observation else metadata[key]
            text = value if isinstance(value, str) else _chat_text(value)
        else:
            strings = [v for v in observation.values() if isinstance(v, str)]
            if len(strings) == 1:
                text = strings[0]
            elif not observation and "prompt" in metadata:
                text = _chat_text(metadata["prompt"])
            else:
                text = json.dumps(observation, sort_keys=True)
        limit = self.config.max_observation_chars
        return text if len(text) <= limit else text[:limit] + "\n[observation cut]"

    def close(self) -> None:
        self._check_success_reward(final=True)
        self.client.close()


def _chat_text(value) -> str:
    """A chat prompt ([{"role", "content"}, ...], as verifiers environments give
    it) as its messages' contents, one after another; any other value as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in value):
        return "\n\n".join(m["content"] for m in value)
    return json.dumps(value, sort_keys=True)
