"""Episodes of a tree rollout in OpenEnv's training-trace format
(`openenv.core.harness.TrainingTrace`, openenv 0.10), token for token, and back.

An episode is a root-to-leaf path of a task's tree (every branch point gives one
more); its trace has one TrainingTurn per turn: `prompt_token_ids` the context the
policy read (the turn's whole history), `completion_token_ids` and `per_token_logps`
what it sampled and their sampler log-probabilities, `loss_mask` 0 over the prompt
and 1 over the completion (0 for a completion cut by the context budget, which mtrl
does not train on). Each turn's metadata holds the step's reward, whether it solved
the task, whether the episode ended, and the observation that followed. The ids are
`<task_id>/<path>/turn<t>` (path: the joint actions chosen, "0.1.0").

write_traces / read_traces: one trace per line (JSON), read back with OpenEnv's own
strict validation (token ids, masks and log-probabilities checked as it checks a
capture).
"""

from __future__ import annotations

import os
import pathlib
from typing import Sequence

from mtrl.rollout.tree import TreeRollout


def _training_trace():
    from mtrl.envs.openenv.imports import import_openenv
    return import_openenv("openenv.core.harness").TrainingTrace


def _paths(tree: TreeRollout, task: int):
    """Every root-to-leaf path of task `task`: lists of (record, m, j)."""
    def walk(t: int, node: int, prefix: list):
        if t == len(tree.turns):
            yield prefix
            return
        record = tree.turns[t]
        hits = (record.node_index == node).nonzero()[0]
        if not len(hits):
            yield prefix
            return
        m = int(hits[0])
        for j in range(tree.joint_actions):
            step = prefix + [(record, m, j)]
            if record.expanded[m, j]:
                yield from walk(t + 1, node * tree.joint_actions + j, step)
            else:
                yield step
    yield from walk(0, task, [])


def episode_traces(tree: TreeRollout, tasks: Sequence, agent: int = 0) -> list:
    """One TrainingTrace per episode (root-to-leaf path) of every task in `tree`
    (tasks[p]: task p, for its id), for agent `agent` (module doc)."""
    TrainingTrace = _training_trace()
    if len(tasks) != tree.num_tasks:
        raise ValueError(f"{len(tasks)} tasks for a tree of {tree.num_tasks}")
    traces = []
    G, J = tree.config.num_generations, tree.joint_actions
    for p, task in enumerate(tasks):
        name = str(getattr(task, "task_id", p))
        for path in _paths(tree, p):
            label = ".".join(str(j) for _, _, j in path)
            turns = []
            for record, m, j in path:
                row = m * G + int(tree.joint_index[j, agent])
                prompt = [int(i) for i in record.contexts[agent][m]]
                completion = [int(i) for i in record.completions[agent][row]]
                trained = 0 if record.truncated[agent, row] else 1
                turns.append({
                    "node_id": f"{name}/{label}/turn{record.turn}",
                    "prompt_token_ids": prompt, "completion_token_ids": completion,
                    "per_token_logps": [float(x) for x in record.logprobs[agent][row]],
                    "loss_mask": [0] * len(prompt) + [trained] * len(completion),
                    "response": {"text": record.texts[agent][row]},
                    "metadata": {"task_id": name, "turn": record.turn, "agent": agent,
                                 "reward": float(record.rewards[m, j]),
                                 "success": bool(record.done[m, j]),
                                 "ended": bool(record.ended[m, j]),
                                 "observation": record.observations[agent][m * J + j]}})
            traces.append(TrainingTrace.model_validate({"turns": turns}))
    return traces


def write_traces(path: str | os.PathLike, traces: Sequence) -> pathlib.Path:
    """Writes `traces` (TrainingTrace), one JSON line each; written to a temporary
    name and renamed, so readers never see half a file."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text("".join(trace.model_dump_json() + "\n" for trace in traces),
                       encoding="utf-8")
    os.replace(partial, path)
    return path


def read_traces(path: str | os.PathLike) -> list:
    """The traces of a write_traces file, each validated by OpenEnv's TrainingTrace."""
    TrainingTrace = _training_trace()
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    return [TrainingTrace.model_validate_json(line) for line in lines if line.strip()]
