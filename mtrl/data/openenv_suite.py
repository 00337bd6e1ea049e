"""Episodes of an external environment as a task suite (`data.name = "openenv"`,
played by env.name=openenv: mtrl/envs/openenv).

A task is the reset of one episode: `{"seed": s, **data.options.reset}`. The splits
take disjoint seed ranges: train data.num_train seeds from data.options.seed_base
(default 0), then data.num_eval validation seeds, then data.num_test test seeds
(none without data.test_split). Whether different seeds are different episodes is
the server's; a server that ignores the seed gives the three splits one episode.

With data.options.server (the server's URL, as env.url), the tasks are the server's
own task list instead (OpenEnv's task API; mtrl/envs/openenv/tasks.py): its train,
validation and test splits, the first data.num_train, num_eval, num_test of each.

The suite has no demonstrations: runs on it start without SFT (sft.enabled=false)
or from train.init_from.
"""

from __future__ import annotations

from mtrl.config.fields import check_int
from mtrl.data.suite import SUITES, DataConfig, check_split
from mtrl.data.suite_options import check_known_options
from mtrl.envs.openenv.task import EpisodeTask

_OPTIONS = ("seed_base", "reset", "server")


class OpenEnvSuite:
    task_type = EpisodeTask

    def __init__(self, data: DataConfig, seed: int):
        del seed  # the episodes' seeds are the splits' (module doc)
        check_known_options("openenv", data.options, _OPTIONS)
        if data.path:
            raise ValueError("config.data.path: openenv episodes come from the server; "
                             "leave it ''")
        base = data.options.get("seed_base", 0)
        check_int("config.data.options.seed_base", base, 0)
        reset = dict(data.options.get("reset", {}))
        if "seed" in reset:
            raise ValueError("config.data.options.reset: 'seed' is the split's; set "
                             "data.options.seed_base instead")
        sizes = (data.num_train, data.num_eval, data.num_test if data.test_split else 0)
        if data.options.get("server"):
            from mtrl.envs.openenv.tasks import server_tasks
            if reset or "seed_base" in data.options:
                raise ValueError("config.data.options: server lists the tasks; seed_base "
                                 "and reset are for seeded episodes")
            self._splits = server_tasks(data.options["server"], sizes)
            return
        starts = (base, base + sizes[0], base + sizes[0] + sizes[1])
        self._splits = {
            split: [EpisodeTask(f"seed/{s}", tuple(sorted({"seed": s, **reset}.items())))
                    for s in range(start, start + size)]
            for split, start, size in zip(("train", "validation", "test"), starts, sizes)}

    def tasks(self, split: str) -> list:
        return list(self._splits[check_split(split)])

    def templates(self, name: str):
        raise ValueError(f"the openenv suite has no code prompt templates (asked for "
                         f"{name!r}); use env.name=openenv")

    def check_sft(self, sft, num_agents: int) -> None:
        if num_agents != 1:
            raise ValueError(f"config.env.num_agents: an OpenEnv environment has one agent, "
                             f"got {num_agents}")
        if sft.enabled:
            raise ValueError("config.sft.enabled: the openenv suite has no demonstrations; "
                             "set it false (or start from train.init_from)")

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        self.check_sft(sft, num_agents)
        return [[]]


SUITES.register("openenv")(OpenEnvSuite)
