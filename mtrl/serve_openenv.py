"""mtrl's sandboxed code environment served over OpenEnv's protocol, so another
framework's OpenEnv client can train or evaluate on it:

    python -m mtrl.serve_openenv --suite=mbpp_sanitized \
        --data_path=../shared/data/mbpp --port=8000

It prints one line with its URL once it accepts connections. A session (WebSocket
/ws) is one episode of one code task, with one agent:
- reset(seed=None, task_id=None, split="train", index=None): the task `task_id`,
  else the split's task number `index`, else number seed mod the split's size (seed
  None: 0); the observation's `text` is the task's first prompt (the suite's
  templates);
- step({"code": completion}): the completion (a ```python block or bare code) runs
  in mtrl's sandbox (the jail of docs/sandbox.md) against the task's tests; the reward
  is mtrl's code reward (env.reward: level, or pass_rate, ...), the observation's
  `text` the feedback mode's message (tests passed, the first failing test and its
  error), `tests_passed` / `tests_total` the verdict; the episode is done when every
  test passes or after --max_turns steps; its metadata's `success` says whether
  every test passed (what a client counts as solved).
The task list is OpenEnv's task API (GET /mtrl_code/splits: train, validation,
test; POST /mtrl_code/num_tasks, /mtrl_code/task, /mtrl_code/tasks).
The sandbox pool is shared by the sessions (one lock: the pool runs one batch at a
time); --max_sessions bounds the sessions open at once, --idle_timeout_s closes a
session whose client has sent nothing for that long while the server waited for it
(a step in progress never counts), and --max_body_bytes bounds what a request may
carry: an HTTP body over it gets 413 before it is read, a WebSocket message over it
closes the connection (1009). See docs/sandbox.md, "OpenEnv server".
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
from typing import Any, Optional

from pydantic import Field

from mtrl.envs.openenv.imports import import_openenv

create_fastapi_app = import_openenv("openenv.core.env_server.http_server").create_fastapi_app
_interfaces = import_openenv("openenv.core.env_server.interfaces")
_types = import_openenv("openenv.core.env_server.types")
OpenEnvBase, Action, Observation, State = (_interfaces.Environment, _types.Action,
                                           _types.Observation, _types.State)

from mtrl.data.suite import DataConfig, build_suite  # noqa: E402
from mtrl.envs.openenv.server_limits import BodyLimit, IdleTimeout  # noqa: E402
from mtrl.envs.registry import EnvSection, build_environment
from mtrl.envs.sandbox import Limits
from mtrl.envs.sandbox.slot_client import SLOT_GRACE_S
from mtrl.envs.text import MAX_COMPLETION_CHARS

# The JSON of a completion at the cap is at most 12 bytes a character (one outside
# the BMP as two \uXXXX escapes): 768,000 bytes, with room for the envelope; four
# times the cap's UTF-8 (256,000 bytes).
MAX_BODY_BYTES = 16 * MAX_COMPLETION_CHARS
ENV_NAME = "mtrl_code"  # the task API's /{env_name}/... routes
SPLITS = ("train", "validation", "test")
IDLE_TIMEOUT_S = 300.0  # > step_worst_case_s(Limits(), 4): 80 s
WS_MAX_QUEUE = 4  # messages a connection may have waiting, each up to max_body_bytes


def step_worst_case_s(limits: Limits, max_sessions: int) -> float:
    """The longest a step can take: its program's wall-clock limit plus the pool's
    grace before it declares the slot hung, behind every other session's step (one
    lock): max_sessions * (wall_s_total + SLOT_GRACE_S)."""
    return max_sessions * (limits.wall_s_total + SLOT_GRACE_S)


@dataclasses.dataclass(frozen=True)
class ServerLimits:
    """What one client can hold of the server: a session slot (max_sessions of them),
    for at most idle_timeout_s of silence, and max_body_bytes a request."""

    max_sessions: int = 4
    max_body_bytes: int = MAX_BODY_BYTES
    idle_timeout_s: float = IDLE_TIMEOUT_S

    def __post_init__(self):
        if self.max_sessions < 1 or self.max_body_bytes < 1 or not self.idle_timeout_s > 0:
            raise ValueError(f"max_sessions, max_body_bytes and idle_timeout_s must be "
                             f"positive, got {self}")


class CodeAction(Action):
    code: str = Field(..., description="the agent's completion: a ```python block or code")


class CodeObservation(Observation):
    text: str = Field("", description="the task's prompt (reset) or the feedback (step)")
    tests_passed: int = 0
    tests_total: int = 0
    turn: int = 0


class CodeService:
    """What every session shares: the suite's tasks and one CodeEnv (its sandbox)."""

    def __init__(self, suite: str, data_path: str = "", *, max_turns: int = 2,
                 feedback_mode: str = "level_feedback", reward: str = "level",
                 templates: str = "default", num_eval: int = 100, num_test: int = 100):
        data = DataConfig(name=suite, path=data_path, num_eval=num_eval, num_test=num_test,
                          **({"train_split": "train", "eval_split": "validation",
                              "test_split": "test"} if suite.startswith("mbpp") else {}))
        self.suite = build_suite(data, 0)
        self.built = build_environment(
            EnvSection.of("code", num_agents=1, feedback_mode=feedback_mode,
                          reward=reward, templates=templates), max_turns, suite, self.suite,
            None)
        self.env, self.max_turns = self.built.env, max_turns
        self.lock = threading.Lock()
        self._tasks = {split: self.suite.tasks(split) for split in SPLITS}

    def splits(self) -> list[str]:
        return [split for split in SPLITS if self._tasks[split]]

    def tasks(self, split: str) -> list:
        if split not in self.splits():
            raise ValueError(f"split must be one of {self.splits()}, got {split!r}")
        return self._tasks[split]

    def task(self, split: str, seed: Optional[int], task_id: Optional[str],
             index: Optional[int] = None):
        tasks = self.tasks(split)
        if task_id is not None:
            found = [t for t in tasks if str(t.task_id) == str(task_id)]
            if not found:
                raise ValueError(f"no task {task_id!r} in the {split} split")
            return found[0]
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int) or not (
                    0 <= index < len(tasks)):
                raise IndexError(f"index must be in [0, {len(tasks)}) for the {split} "
                                 f"split, got {index!r}")
            return tasks[index]
        return tasks[(seed or 0) % len(tasks)]

    def close(self) -> None:
        self.built.close()


class MtrlCodeEnvironment(OpenEnvBase):
    """One session's episode over the shared CodeService (module doc)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, service: CodeService):
        super().__init__()
        self.service = service
        self._branch: Any = None
        self._state = State(step_count=0)

    # OpenEnv's task API (TaskProvider): the suite's splits and tasks.
    def list_splits(self) -> list[dict]:
        return [{"name": split, "type": split} for split in self.service.splits()]

    def num_tasks(self, split: str) -> int:
        return len(self.service.tasks(split))

    def get_task(self, split: str, index: int) -> dict:
        task = self.service.task(split, None, None, index)
        return {"id": str(task.task_id), "index": index, "split": split}

    def get_task_range(self, split: str, start: Optional[int] = None,
                       stop: Optional[int] = None) -> list[dict]:
        indices = range(len(self.service.tasks(split)))[slice(start, stop)]
        return [self.get_task(split, i) for i in indices]

    def list_tasks(self, split: str) -> list[dict]:
        return self.get_task_range(split)

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None,
              task_id: Optional[str] = None, split: str = "train",
              index: Optional[int] = None, **kwargs: Any) -> CodeObservation:
        if kwargs:
            raise ValueError(f"unknown reset arguments {sorted(kwargs)}; valid: seed, "
                             "episode_id, task_id, split, index")
        task = self.service.task(split, seed, task_id, index)
        self._branch, (prompt,) = self.service.env.reset(task)
        self._state = State(episode_id=episode_id or str(task.task_id), step_count=0)
        return CodeObservation(text=prompt, done=False, reward=None,
                               metadata={"task_id": str(task.task_id)})

    def step(self, action: CodeAction, timeout_s: Optional[float] = None,
             **kwargs: Any) -> CodeObservation:
        if self._branch is None:
            raise ValueError("reset the episode before its first step")
        turn = self._state.step_count + 1
        if turn > self.service.max_turns:
            raise ValueError(f"the episode is over (it has {self.service.max_turns} turns)")
        with self.service.lock:
            (result,) = self.service.env.step([self._branch], [(action.code,)], turn)
        self._branch = result.state
        self._state = State(episode_id=self._state.episode_id, step_count=turn)
        info = result.info
        return CodeObservation(
            text=result.observations[0], tests_passed=int(info["num_passed"]), tests_total=int(info["num_tests"]),
            turn=turn, reward=float(result.reward),
            done=bool(result.done or turn >= self.service.max_turns),
            metadata={"task_id": str(self._branch.task.task_id),
                      "success": bool(result.done)})

    @property
    def state(self) -> State:
        return self._state


def make_app(service: CodeService, limits: ServerLimits = ServerLimits()):
    """The FastAPI app (OpenEnv's routes: /ws, /reset, /step, /schema, /health), its
    request bodies and idle sessions bounded (`limits`; server_limits.py)."""
    app = create_fastapi_app(lambda: MtrlCodeEnvironment(service), CodeAction,
                             CodeObservation, max_concurrent_envs=limits.max_sessions,
                             env_name=ENV_NAME)
    app.add_middleware(IdleTimeout, timeout_s=limits.idle_timeout_s)
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="intfn", help="a code suite: intfn, mbpp, "
                        "mbpp_sanitized, humaneval")
    parser.add_argument("--data_path", default="", help="the suite's data file or folder")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max_turns", type=int, default=2)
    parser.add_argument("--max_sessions", type=int, default=ServerLimits.max_sessions)
    parser.add_argument("--max_body_bytes", type=int, default=MAX_BODY_BYTES,
                        help="the largest HTTP body or WebSocket message accepted")
    parser.add_argument("--idle_timeout_s", type=float, default=IDLE_TIMEOUT_S,
                        help="a session whose client is silent this long is closed")
    parser.add_argument("--feedback_mode", default="level_feedback")
    parser.add_argument("--reward", default="level")
    parser.add_argument("--templates", default="default")
    args = parser.parse_args(argv)
    import uvicorn
    try:
        limits = ServerLimits(args.max_sessions, args.max_body_bytes, args.idle_timeout_s)
        service = CodeService(args.suite, args.data_path, max_turns=args.max_turns,
                              feedback_mode=args.feedback_mode, reward=args.reward,
                              templates=args.templates)
    except (ValueError, FileNotFoundError) as e:
        raise SystemExit(f"error: {' '.join(str(e).split())}") from None
    try:
        config = uvicorn.Config(make_app(service, limits), host=args.host, port=args.port,
                                log_level="warning", ws_max_size=limits.max_body_bytes,
                                ws_max_queue=WS_MAX_QUEUE)
        AnnouncingServer(config, f"mtrl's code environment ({args.suite}, "
                         f"{limits.max_sessions} sessions)").run()
    finally:
        service.close()


def _announcing_server():
    import uvicorn

    class Announcing(uvicorn.Server):
        """uvicorn's server, printing one line with its URL once its socket listens."""

        def __init__(self, config, what: str):
            super().__init__(config)
            self.what = what

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if self.started:
                host, port = self.config.host, self.config.port
                for server in getattr(self, "servers", ()):  # the bound port (0: any)
                    for sock in server.sockets:
                        port = sock.getsockname()[1]
                print(f"serving {self.what} at http://{host}:{port} (OpenEnv WebSocket "
                      f"ws://{host}:{port}/ws)", flush=True, file=sys.stdout)

    return Announcing


def AnnouncingServer(config, what: str):  # noqa: N802 -- builds the class on first use
    return _announcing_server()(config, what)


if __name__ == "__main__":
    main()
