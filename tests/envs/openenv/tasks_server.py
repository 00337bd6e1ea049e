"""An OpenEnv 0.10 environment as a researcher would write one, with a task list and
0/1 rewards (served on 127.0.0.1 by the tests):

    python tests/envs/openenv/tasks_server.py PORT [MAX_SESSIONS]

"Say the word": OpenEnv's task API lists the splits train (5 tasks), dev (type
validation, 4 tasks) and test (3 tasks); task i of split s asks for the word
"<s><i>" (train0, dev2, ...). reset(split, index) plays that task. A step's reward is
1.0 when the message contains the word, else 0.0; the server declares no success of
its own. The episode ends when the word is said or after 2 steps. MAX_SESSIONS
(default 4) bounds the sessions open at once.
"""

import sys
from typing import Any, Optional

from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

SPLITS = {"train": ("train", 5), "dev": ("validation", 4), "test": ("test", 3)}


class WordAction(Action):
    message: str


class WordObservation(Observation):
    prompt: str = ""


class SayWordEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        super().__init__()
        self._state = State(step_count=0)
        self.word = ""

    def list_splits(self):
        return [{"name": name, "type": kind} for name, (kind, _) in SPLITS.items()]

    def num_tasks(self, split: str) -> int:
        return SPLITS[split][1]

    def get_task(self, split: str, index: int):
        if not 0 <= index < SPLITS[split][1]:
            raise IndexError(index)
        return {"id": f"{split}{index}", "index": index}

    def list_tasks(self, split: str):
        return [self.get_task(split, i) for i in range(SPLITS[split][1])]

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None,
              split: str = "train", index: int = 0, **kwargs: Any) -> WordObservation:
        self.word = self.get_task(split, index)["id"]
        self._state = State(episode_id=episode_id, step_count=0)
        return WordObservation(prompt=f"Say the word {self.word}.")

    def step(self, action: WordAction, timeout_s=None, **kwargs) -> WordObservation:
        self._state.step_count += 1
        said = self.word in action.message
        return WordObservation(prompt="Right." if said else f"No. Say {self.word}.",
                               reward=1.0 if said else 0.0,
                               done=said or self._state.step_count >= 2)

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    import uvicorn
    sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    app = create_fastapi_app(SayWordEnv, WordAction, WordObservation,
                             max_concurrent_envs=sessions, env_name="say_word")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
