"""A server's own task list as mtrl's train / validation / test (OpenEnv's task API,
openenv 0.10: GET /list_environments, GET /{env}/splits, POST /{env}/num_tasks).

Each split the server lists has a type (train, validation or test). mtrl's train
split is the server's train split, its validation split the first of type
validation, its test split the first of type test; a server without a test split
gives its validation split to both, cut in two disjoint halves (the first
`num_eval` tasks validate, the next `num_test` test). A task is the reset
`{"split": name, "index": i}` (OpenEnv's way to select a listed task), id
"name/i"; a split yields its first `size` tasks (all, if it has fewer).
"""

from __future__ import annotations

from mtrl.envs.openenv.task import EpisodeTask

ROLES = ("train", "validation", "test")


def _get(url: str, path: str, timeout_s: float, body: dict | None = None):
    import requests
    address = f"{url}{path}"
    try:
        reply = (requests.post(address, json=body, timeout=timeout_s) if body is not None
                 else requests.get(address, timeout=timeout_s))
    except requests.RequestException as e:
        raise ValueError(f"config.data.options.server: no OpenEnv server answers "
                         f"{address} ({type(e).__name__}); start it first") from None
    if reply.status_code in (404, 501):
        raise ValueError(f"config.data.options.server: the server at {url} lists no tasks "
                         f"({path} answered HTTP {reply.status_code}); unset "
                         "data.options.server to play its episodes by seed")
    if not reply.ok:
        raise ValueError(f"config.data.options.server: {address} answered HTTP "
                         f"{reply.status_code}: {reply.text[:200]}")
    return reply.json()


def server_splits(url: str, timeout_s: float = 30.0) -> dict[str, str]:
    """{mtrl role: the server's split name} (module doc); ValueError in one line for
    a server without a task list or without a train split."""
    url = url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/")
    names = _get(url, "/list_environments", timeout_s)
    if not isinstance(names, list) or len(names) != 1:
        raise ValueError(f"config.data.options.server: {url}/list_environments should "
                         f"name one environment, got {names!r}")
    splits = _get(url, f"/{names[0]}/splits", timeout_s)
    by_type: dict[str, str] = {}
    for split in splits:
        by_type.setdefault(split.get("type", "validation"), split["name"])
    if "train" not in by_type:
        raise ValueError(f"config.data.options.server: the server at {url} lists no train "
                         f"split (it has {[s['name'] for s in splits]})")
    return {role: by_type[role] for role in ROLES if role in by_type}


def server_tasks(url: str, sizes: tuple[int, int, int], timeout_s: float = 30.0
                 ) -> dict[str, list[EpisodeTask]]:
    """{"train", "validation", "test": at most sizes[i] tasks each} from the server's
    task list (module doc)."""
    url = url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/")
    roles = server_splits(url, timeout_s)
    (env,) = _get(url, "/list_environments", timeout_s)
    counts = {name: int(_get(url, f"/{env}/num_tasks", timeout_s, {"split": name})
                        ["num_tasks"]) for name in set(roles.values())}
    starts = {"train": 0, "validation": 0, "test": 0}
    if "test" not in roles and "validation" in roles:
        roles["test"] = roles["validation"]
        starts["test"] = min(sizes[1], counts[roles["validation"]])
    result = {}
    for role, size in zip(ROLES, sizes):
        if role not in roles:
            result[role] = []
            continue
        name, start = roles[role], starts[role]
        stop = min(start + size, counts[name])
        result[role] = [EpisodeTask(f"{name}/{i}", (("index", i), ("split", name)))
                        for i in range(start, stop)]
    return result
