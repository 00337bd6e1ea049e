"""The trajectory generator: multi-turn, multi-agent tree rollouts (docs/design.md §1-2).

Per turn, every active node of every task is generated in one backend call per
agent: each agent samples G completions per node (one prefill per node, shared by
its G samples). Joint actions pair completions (`align`: the g-th of every agent,
J = G; `cross`: the Cartesian product, J = G^N), the environment scores all joint
actions of all nodes in one batched call, and a node expands (one child per joint
action) unless the mean immediate reward of its J joint actions is strictly above
`termination_threshold`; a joint action whose step ended its episode
(`StepResult.ended`, mtrl/rollout/environment.py) gets no child either way. A child's history is its parent's history, the agent's own
completion in that joint action, and the observation the environment wrote for
that branch — appended, so the backend extends the parent's KV cache instead of
re-encoding the history.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any, Sequence

import jax
import numpy as np

from mtrl.credit import joint_action_index, termination_mask
from mtrl.rollout.environment import Environment
from mtrl.rollout.backend import PolicyBackend
from mtrl.rollout.config import RolloutConfig
from mtrl.rollout.formatting import PlainFormat
from mtrl.rollout.history import first_ids, observation_ids
from mtrl.rollout.tree import TreeRollout, TurnRecord


def rollout(tasks: Sequence[Any], env: Environment, backend: PolicyBackend, tokenizer,
            config: RolloutConfig, key: jax.Array, turn_format=None,
            first_group: int | None = None) -> TreeRollout:
    """Grows one tree per task for up to `config.num_turns` turns.

    With config.env_groups = K > 1 the tasks are split into K contiguous groups; per
    turn each group is generated (one backend call per agent) and its joint actions go
    to `env.step_async` at once, so the environment scores group k while the device
    generates group k+1. Nodes keep their order, so the tree is the one a synchronous
    environment would give for the same groups (a group's keys are folded with its
    index; K = 1 is one batched call per agent and `env.step`, as before).

    first_group = o (one process's share of a multi-process step, mtrl/parallel/
    process_rollout.py): group k's keys are folded with o + k even when K = 1, so
    process p of P with K groups each grows the trees that one process with P·K
    groups grows for the same tasks.
    """
    if env.num_agents != config.num_agents:
        raise ValueError(f"environment has {env.num_agents} agents, "
                         f"RolloutConfig.num_agents={config.num_agents}")
    if not tasks:
        raise ValueError("rollout needs at least one task")
    config.check_capacity(len(tasks))
    fmts = per_agent_formats(turn_format, config.num_agents)
    n, g = config.num_agents, config.num_generations
    joint = np.asarray(joint_action_index(config.joint_mode, n, g), np.int32)
    j_count = joint.shape[0]
    stop_ids = {tokenizer.eos_id}
    timer = _Timer()

    started = [env.reset(task) for task in tasks]
    prompts = [[first_ids(tokenizer, fmts[a], obs[a]) for a in range(n)] for _, obs in started]
    for p, per_agent in enumerate(prompts):
        for a, prompt in enumerate(per_agent):
            if len(prompt) >= config.max_context:
                raise ValueError(f"task {p}: agent {a}'s prompt has {len(prompt)} tokens, "
                                 f"RolloutConfig.max_context={config.max_context}")
    groups = []
    with timer.device():
        for task_ids in np.array_split(np.arange(len(tasks)),
                                       min(config.env_groups, len(tasks))):
            groups.append(_Group(
                contexts=[backend.begin(a, [prompts[p][a] for p in task_ids]) for a in range(n)],
                states=[started[p][0] for p in task_ids], node_index=task_ids.astype(np.int64),
                context_cut=np.zeros((n, len(task_ids)), bool)))
    overlap = len(groups) > 1

    turns: list[TurnRecord] = []
    for turn in range(1, config.num_turns + 1):
        turn_key = jax.random.fold_in(key, turn)
        pending = []  # per group: (generated, future or results)
        for k, group in enumerate(groups):
            with timer.device():
                index = k + first_group if first_group is not None else (k if overlap else None)
                made = _generate(group, backend, config, turn_key, index,
                                 tokenizer, stop_ids)
            states, actions = [], []
            for m in range(len(group.node_index)):
                for j in range(j_count):
                    states.append(group.states[m])
                    actions.append(tuple(made.texts[a][m * g + joint[j, a]] for a in range(n)))
            if overlap:  # scored in the background while the next group generates
                pending.append((made, env.step_async(states, actions, turn)))
            else:
                with timer.env():
                    pending.append((made, env.step(states, actions, turn)))
        per_group = []
        for made, out in pending:
            if overlap:
                with timer.env():  # only the wait the device did not hide
                    out = out.result()
            per_group.append((made, list(out)))
        results = [r for _, out in per_group for r in out]
        node_index = np.concatenate([grp.node_index for grp in groups])
        m_count = len(node_index)

        rewards = np.array([r.reward for r in results], np.float32).reshape(m_count, j_count)
        ended = np.array([bool(r.ended) for r in results], bool).reshape(m_count, j_count)
        # The credit library's rule: expand iff mean_j r <= threshold (equality expands).
        node_expands = np.array(termination_mask(rewards, config.termination_threshold)[:, 0])
        if turn == config.num_turns:
            node_expands[:] = False
        elif not any(r.reset_context for r in results):
            # A node whose histories leave no room for one observation token and one
            # sampled token ends its branches here, as at the last turn.
            node_expands &= ~np.concatenate([_full(made, config.max_context)
                                             for made, _ in per_group])
        # The episode-end rule (mtrl/rollout/environment.py): a step that ended its episode is
        # the last of its path, whatever its siblings do.
        expands = node_expands[:, None] & ~ended
        names = sorted(results[0].components) if results else []
        components = {name: np.array([r.components.get(name, 0.0) for r in results],
                                     np.float32).reshape(m_count, j_count) for name in names}
        cat = lambda f: [x for made, _ in per_group for x in f(made)]
        turns.append(TurnRecord(
            turn=turn, node_index=node_index,
            contexts=[cat(lambda d, a=a: d.contexts[a]) for a in range(n)],
            completions=[cat(lambda d, a=a: d.samples[a].tokens) for a in range(n)],
            logprobs=[cat(lambda d, a=a: d.samples[a].logprobs) for a in range(n)],
            truncated=np.concatenate([d.truncated for d, _ in per_group], axis=1),
            texts=[cat(lambda d, a=a: d.texts[a]) for a in range(n)],
            rewards=rewards, expanded=expands,
            done=np.array([r.done for r in results], bool).reshape(m_count, j_count),
            components=components,
            observations=[[r.observations[a] for r in results] for a in range(n)],
            infos=[r.info for r in results], ended=ended,
            reset_context=any(r.reset_context for r in results)))
        if not expands.any():
            break

        children, offset = [], 0
        for group, (made, out) in zip(groups, per_group):
            size = len(group.node_index)
            grows = expands[offset:offset + size]
            offset += size
            if grows.any():
                with timer.device():
                    children.append(_children(group, made, out, grows, joint, config,
                                              backend, tokenizer, fmts, stop_ids))
        groups = children

    tree = TreeRollout(config=config, num_tasks=len(tasks), joint_index=joint, turns=turns,
                       metrics={})
    tree.metrics.update(_metrics(tree, timer.device_s, timer.env_s))
    tree.metrics["rollout/env_groups"] = float(config.env_groups)
    return tree


@dataclasses.dataclass
class _Group:
    """Nodes of a contiguous range of tasks, generated in one backend call per agent."""

    contexts: list  # [N] Contexts, one row per node
    states: list  # [M] environment branch states
    node_index: np.ndarray  # [M] int64 flat node index in [P] + [J]*(turn-1)
    context_cut: np.ndarray  # [N, M] bool observation cut by the context budget


@dataclasses.dataclass
class _Generated:
    """One group's samples at one turn (rows = node·G + g)."""

    contexts: list  # [N][M] token histories the samples continue
    samples: list  # [N] Samples
    after: list  # [N] Contexts extended by the samples
    texts: list  # [N][M·G] decoded completions (stop token stripped)
    truncated: np.ndarray  # [N, M·G] bool cut by the context budget


def _generate(group: _Group, backend, config, turn_key, index, tokenizer, stop_ids
              ) -> _Generated:
    g = config.num_generations
    samples, after, cut_short = [], [], []
    for a, contexts in enumerate(group.contexts):
        budgets = [min(config.max_new_tokens, config.max_context - len(row))
                   for row in contexts.tokens]
        key = jax.random.fold_in(turn_key, a)
        if index is not None:
            key = jax.random.fold_in(key, index)
        s, c = backend.generate(a, contexts, g, budgets, key)
        samples.append(s)
        after.append(c)
        # Cut by the context budget (not by the per-turn budget or a stop token).
        cut_short.append(np.array(
            [budgets[r // g] < config.max_new_tokens and len(toks) >= budgets[r // g]
             and not _stopped(toks, stop_ids) for r, toks in enumerate(s.tokens)], bool))
    texts = [[tokenizer.decode(_strip_stop(row, stop_ids)) for row in s.tokens]
             for s in samples]
    truncated = np.stack([cut_short[a] | np.repeat(group.context_cut[a], g)
                          for a in range(len(samples))])
    return _Generated(contexts=[c.tokens for c in group.contexts], samples=samples,
                      after=after, texts=texts, truncated=truncated)


def _full(made: _Generated, max_context: int) -> np.ndarray:
    """[M] bool: some agent's history after a sample of the node is >= max_context − 1."""
    n = len(made.after)
    m_count = len(made.contexts[0])
    full = np.zeros(m_count, bool)
    for a in range(n):
        lengths = np.array([len(row) for row in made.after[a].tokens]).reshape(m_count, -1)
        full |= (lengths >= max_context - 1).any(axis=1)
    return full


def _children(group: _Group, made: _Generated, results, grows, joint, config, backend,
              tokenizer, fmts, stop_ids) -> _Group:
    """One child per expanding joint action (grows: [M, J]); histories appended (the
    backend extends the parent's cache) or, with reset_context, fresh prompts."""
    n, g = config.num_agents, config.num_generations
    j_count = joint.shape[0]
    parents, chosen = np.nonzero(grows)
    child_index = group.node_index[parents] * j_count + chosen
    child_results = [results[m * j_count + j] for m, j in zip(parents, chosen)]
    reset = any(r.reset_context for r in child_results)
    contexts, context_cut = [], np.zeros((n, len(child_results)), bool)
    for a in range(n):
        rows = [m * g + joint[j, a] for m, j in zip(parents, chosen)]
        new = [observation_ids(tokenizer, fmts[a], r.observations[a],
                               _stopped(made.samples[a].tokens[row], stop_ids), reset)
               for r, row in zip(child_results, rows)]
        base = [0 if reset else len(made.after[a].tokens[row]) for row in rows]
        for i, (b, toks) in enumerate(zip(base, new)):
            room = config.max_context - 1 - b  # leave room for one sampled token
            if len(toks) > room:
                new[i] = toks[:max(room, 0)]
                context_cut[a, i] = True
        contexts.append(backend.begin(a, new) if reset
                        else backend.extend(a, made.after[a], rows, new))
    return _Group(contexts=contexts, states=[r.state for r in child_results],
                  node_index=child_index, context_cut=context_cut)


class _Timer:
    """Wall seconds on the device side and blocked on the environment."""

    def __init__(self):
        self.device_s = self.env_s = 0.0

    @contextlib.contextmanager
    def device(self):
        start = time.perf_counter()
        yield
        self.device_s += time.perf_counter() - start

    @contextlib.contextmanager
    def env(self):
        start = time.perf_counter()
        yield
        self.env_s += time.perf_counter() - start


def per_agent_formats(turn_format, num_agents: int) -> tuple:
    """One turn format per agent: None -> PlainFormat, one format -> shared, or a
    sequence with one per agent (e.g. chat formats with per-agent system prompts)."""
    if turn_format is None:
        turn_format = PlainFormat()
    if not isinstance(turn_format, (list, tuple)):
        return (turn_format,) * num_agents
    if len(turn_format) != num_agents:
        raise ValueError(f"{len(turn_format)} turn formats for {num_agents} agents")
    return tuple(turn_format)


def _strip_stop(tokens: list[int], stop_ids: set) -> list[int]:
    return tokens[:-1] if tokens and tokens[-1] in stop_ids else tokens


def _stopped(tokens: list[int], stop_ids: set) -> bool:
    return bool(tokens) and tokens[-1] in stop_ids


def _metrics(tree: TreeRollout, device_s: float, env_s: float) -> dict[str, float]:
    out = {"rollout/device_seconds": device_s, "rollout/env_seconds": env_s,
           "rollout/leaves": float(tree.leaves())}
    generated = 0
    for r in tree.turns:
        out[f"rollout/turn{r.turn}_nodes"] = float(len(r.node_index))
        out[f"rollout/turn{r.turn}_reward_mean"] = float(r.rewards.mean())
        out[f"rollout/turn{r.turn}_truncated_fraction"] = float(r.truncated.mean())
        generated += sum(len(t) for rows in r.completions for t in rows)
    out["rollout/generated_tokens"] = float(generated)
    out["rollout/truncated_completions"] = float(sum(r.truncated.sum() for r in tree.turns))
    return out
