"""A small OpenEnv environment as a researcher would write one (against openenv-core's
own base classes, knowing nothing of mtrl), served on 127.0.0.1 by the tests:

    python tests/envs/openenv/toy_server.py PORT

"Say the number": reset(seed) picks n = 2 + seed % 7 and asks for it; each step's
reward is 1.0 when the message contains n, else -len(message) / 100 (so random
messages of different lengths get different rewards); the episode ends when n is
said or after 3 steps. Deterministic in (seed, messages), as the adapter needs.

Misbehaviour, chosen per episode by reset(mode=...): "slow" sleeps `delay` s in every
step; "slow_once" sleeps `delay` s in the first step this process plays for a seed,
then answers at once; "no_reward" and "nan_reward" answer a step without a usable
reward; "die" ends the server process in its second step; "drift" adds to each
step's reward a count of the steps this process has played (not deterministic).
"""

import math
import os
import sys
import time
from typing import Any, Optional

from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

SLOWED: set = set()  # seeds whose first step was slowed ("slow_once")
PLAYED = [0]  # steps this process has played ("drift")


class SayAction(Action):
    message: str


class SayObservation(Observation):
    prompt: str = ""


class SayNumberEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        super().__init__()
        self._state = State(step_count=0)
        self.target, self.mode, self.delay, self.seed = 0, "", 0.0, 0

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None,
              mode: str = "", delay: float = 0.0, **kwargs: Any) -> SayObservation:
        self.seed = seed or 0
        self.target, self.mode, self.delay = 2 + self.seed % 7, mode, delay
        self._state = State(episode_id=episode_id, step_count=0)
        return SayObservation(prompt=f"Say the number {self.target}.")

    def step(self, action: SayAction, timeout_s=None, **kwargs) -> SayObservation:
        self._state.step_count += 1
        if self.mode == "slow" or (self.mode == "slow_once" and self.seed not in SLOWED):
            SLOWED.add(self.seed)
            time.sleep(self.delay)
        if self.mode == "die" and self._state.step_count == 2:
            os._exit(3)
        said = str(self.target) in action.message
        reward = 1.0 if said else -len(action.message) / 100
        PLAYED[0] += 1
        if self.mode == "drift":
            reward += PLAYED[0]
        if self.mode == "no_reward":
            reward = None
        elif self.mode == "nan_reward":
            reward = math.nan
        done = said or self._state.step_count >= 3
        return SayObservation(prompt="Right." if said else f"No. Say {self.target}.",
                              reward=reward, done=done)

    @property
    def state(self) -> State:
        return self._state


app = create_fastapi_app(SayNumberEnv, SayAction, SayObservation, max_concurrent_envs=8)

if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
