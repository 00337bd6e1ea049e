"""Episodes on an OpenEnv environment server, through the protocol's own client.

OpenEnv (`openenv` on PyPI, 0.10; formerly `openenv-core`) serves an environment over HTTP and WebSocket: a
WebSocket session at `/ws` holds one environment instance, and the messages
`{"type": "reset", "data": {seed, ...}}`, `{"type": "step", "data": <action>}` and
`{"type": "close"}` are answered with `{"type": "observation", "data": {"observation":
{...}, "reward": r, "done": d, "metadata": {...}}}` or `{"type": "error", ...}` (the
HTTP `/reset` and
`/step` routes build a fresh environment per request, so a multi-turn episode needs
the session). This module plays whole episodes on such a server with the package's
`GenericEnvClient`, synchronously, several sessions at a time on one event loop.

An episode is (reset arguments, actions): it is played from its reset on a fresh
session, every action in order. Failures, none of which becomes a reward:
- a slow server: each message waits at most `timeout_s`;
- a dropped session or a refused connection (the server died mid-episode, was
  restarted) and a timeout: the episode is played again from its reset, up to
  `retries` more times (after 0.2 s, 0.4 s, ...), then ExternalEnvError naming the
  server, the episode, the message and the last error;
- malformed data (a reply that is not the protocol's: no observation object, a
  reward that is missing on a step, not a number or not finite, `done` not a bool)
  and an error reply from the server: ExternalEnvError at once (playing it again
  would get the same answer);
- a refused session (the server already holds its most sessions, OpenEnv's
  CAPACITY_REACHED): ExternalEnvError at once, naming the two numbers to make agree
  (env.concurrency here, the server's max sessions there).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import re
import threading
from typing import Any, Sequence

from mtrl.rollout.environment import EnvironmentFailure


class ExternalEnvError(EnvironmentFailure):
    """An external environment server could not play an episode (the message says
    which server, episode and message, and why)."""


class MalformedReply(ValueError):
    """A server reply that is not what the protocol says (never retried)."""


@dataclasses.dataclass(frozen=True)
class Reply:
    """One reset or step reply: the observation object (its fields, without
    `metadata`), the reward (None: reset only), whether the episode is over, and the
    observation's metadata (what the server declares beside it, e.g. `success`)."""

    observation: dict
    reward: float | None
    done: bool
    metadata: dict = dataclasses.field(default_factory=dict)


def parse_reply(payload: Any, what: str) -> Reply:
    """The protocol's {"observation": {...}, "reward": r, "done": d} as a Reply; a
    step's reward must be a finite number (a missing one is not read as 0)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("observation"), dict):
        raise MalformedReply(f"{what}: no observation object in the reply "
                             f"{json.dumps(payload, default=repr)[:200]}")
    reward, done = payload.get("reward"), payload.get("done", False)
    if reward is None and what != "reset":
        raise MalformedReply(f"{what}: the reply has no reward (null)")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))
                               or not math.isfinite(reward)):
        raise MalformedReply(f"{what}: reward must be a finite number, got {reward!r}")
    if not isinstance(done, bool):
        raise MalformedReply(f"{what}: done must be true or false, got {done!r}")
    fields = dict(payload["observation"])
    # openenv 0.10 sends the metadata beside the observation and inside it; 0.3 inside.
    metadata = payload.get("metadata", fields.pop("metadata", None))
    fields.pop("metadata", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise MalformedReply(f"{what}: metadata must be an object, got {metadata!r}")
    return Reply(fields, None if reward is None else float(reward), done, metadata)


def _client_class():
    """GenericEnvClient with the reply check (imported on first use: openenv is the
    `openenv` extra)."""
    from mtrl.envs.openenv.imports import import_openenv
    try:
        GenericEnvClient = import_openenv("openenv.core.generic_client").GenericEnvClient
    except ImportError as e:
        raise ValueError("config.env.name: 'openenv' needs the openenv package "
                         f"(pip install -e \".[openenv]\"): {e}") from None

    class CheckedClient(GenericEnvClient):
        def _parse_result(self, payload):
            return payload  # checked by parse_reply, which knows reset from step

    return CheckedClient


# Errors after which the episode is played again on a fresh session.
def _transient(error: BaseException) -> bool:
    from websockets.exceptions import ConnectionClosed, InvalidHandshake
    return isinstance(error, (TimeoutError, asyncio.TimeoutError, ConnectionError, OSError,
                              ConnectionClosed, InvalidHandshake, EOFError))


class EpisodeClient:
    """Plays episodes on the OpenEnv server at `url` (http://host:port or ws://...).

    play(episodes) -> for each (reset kwargs, actions): (reset reply, step replies).
    At most `concurrency` sessions are open at once (the server's max_concurrent_envs;
    one by default, as OpenEnv's). `attempts` counts the episodes played again after a
    transient failure."""

    def __init__(self, url: str, *, timeout_s: float = 30.0, retries: int = 2,
                 concurrency: int = 1):
        self.url = url.rstrip("/")
        self.timeout_s, self.retries, self.concurrency = timeout_s, retries, concurrency
        self.attempts = 0  # episodes replayed after a transient failure
        self._client_cls = _client_class()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="mtrl-openenv")
        self._thread.start()

    def play(self, episodes: Sequence[tuple[dict, Sequence[dict]]]
             ) -> list[tuple[Reply, list[Reply]]]:
        future = asyncio.run_coroutine_threadsafe(self._play_all(list(episodes)), self._loop)
        return future.result()

    async def _play_all(self, episodes):
        gate = asyncio.Semaphore(self.concurrency)

        async def one(reset, actions):
            async with gate:
                return await self._play_retrying(reset, actions)

        tasks = [asyncio.ensure_future(one(r, a)) for r, a in episodes]
        try:
            return await asyncio.gather(*tasks)
        except BaseException:  # one episode failed: end the others' sessions too
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _play_retrying(self, reset: dict, actions: Sequence[dict]):
        for attempt in range(self.retries + 1):
            progress = {"what": "connect"}
            try:
                return await self._play_once(reset, actions, progress)
            except MalformedReply as e:
                raise ExternalEnvError(f"openenv server {self.url}: malformed reply to "
                                       f"{self._episode(reset)} {e}") from None
            except RuntimeError as e:  # the client's "Server error: ..." (an error reply)
                if not str(e).startswith("Server error"):
                    raise
                if "CAPACITY_REACHED" in str(e) or "capacity" in str(e).lower():
                    raise ExternalEnvError(self._refused(str(e))) from None
                raise ExternalEnvError(f"openenv server {self.url} answered "
                                       f"{progress['what']} of {self._episode(reset)} with "
                                       f"an error: {str(e)[:300]}") from None
            except Exception as e:  # noqa: BLE001 -- sorted into transient or not
                if not _transient(e):
                    raise
                last = (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)
                if isinstance(e, (TimeoutError, asyncio.TimeoutError)):
                    last = f"no answer within {self.timeout_s:g} s"
                if attempt == self.retries:
                    raise ExternalEnvError(
                        f"openenv server {self.url}: {progress['what']} of "
                        f"{self._episode(reset)} failed {self.retries + 1} times (last: "
                        f"{last[:200]}); is the server up and answering within "
                        f"{self.timeout_s:g} s (env.timeout_s, env.retries)?") from None
                self.attempts += 1
                await asyncio.sleep(0.2 * 2 ** attempt)

    async def _play_once(self, reset: dict, actions: Sequence[dict], progress: dict):
        client = self._client_cls(base_url=self.url, connect_timeout_s=self.timeout_s,
                                  message_timeout_s=self.timeout_s)
        try:
            await client.connect()
            progress["what"] = "reset"
            first = parse_reply(await client.reset(**reset), "reset")
            replies = []
            for number, action in enumerate(actions, 1):
                progress["what"] = f"step {number}"
                if (replies[-1] if replies else first).done:
                    raise MalformedReply(f"step {number}: the episode ended at step "
                                         f"{number - 1}; no later step is played")
                replies.append(parse_reply(await client.step(action), f"step {number}"))
            return first, replies
        except json.JSONDecodeError as e:
            raise MalformedReply(f"{progress['what']}: the reply is not JSON ({e})") from None
        finally:
            try:
                await asyncio.wait_for(client.disconnect(), timeout=1.0)
            except Exception:  # noqa: BLE001 -- closing a dead session is best effort
                pass

    def _refused(self, error: str) -> str:
        """The capacity refusal ("Server at capacity: 4/4 sessions active"), naming
        both sides' fields."""
        found = re.search(r"(\d+)\s*/\s*(\d+) sessions", error)
        most = found.group(2) if found else None
        return (f"openenv server {self.url} refused a session: it holds at most "
                f"{most or 'fewer'} at once, and env.concurrency={self.concurrency} "
                f"sessions were opened; set env.concurrency={most or 1} (or raise the "
                f"server's max sessions: max_concurrent_envs, mtrl.serve_openenv "
                f"--max_sessions) [server: {' '.join(error.split())[:200]}]")

    @staticmethod
    def _episode(reset: dict) -> str:
        return f"the episode reset with {json.dumps(reset, sort_keys=True, default=repr)}"

    def close(self) -> None:
        if self._loop.is_running():
            # Sessions still closing (openenv's graceful closes) end before the loop
            # stops, rather than as "Task was destroyed but it is pending" at exit.
            try:
                asyncio.run_coroutine_threadsafe(_drain(), self._loop).result(timeout=5)
            except Exception:  # noqa: BLE001 -- closing is best effort
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)


async def _drain() -> None:
    """Cancels and awaits every other task of the running loop."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
