"""The trajectory generator: multi-turn, multi-agent tree rollouts (DESIGN.md §1-2).

Per turn, every active node of every task is generated in one backend call per
agent: each agent samples G completions per node (one prefill per node, shared by
its G samples). Joint actions pair completions (`align`: the g-th of every agent,
J = G; `cross`: the Cartesian product, J = G^N), the environment scores all joint
actions of all nodes in one batched call, and a node expands (one child per joint
action) unless the mean immediate reward of its J joint actions is strictly above
`termination_threshold`. A child's history is its parent's history, the agent's own
completion in that joint action, and the observation the environment wrote for
that branch — appended, so the backend extends the parent's KV cache instead of
re-encoding the history.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import jax
import numpy as np

from mtrl.credit import joint_action_index, termination_mask
from mtrl.envs.base import Environment
from mtrl.rollout.backend import Contexts, PolicyBackend
from mtrl.rollout.config import RolloutConfig
from mtrl.rollout.formatting import PlainFormat
from mtrl.rollout.history import first_ids, next_ids
from mtrl.rollout.tree import TreeRollout, TurnRecord


def rollout(tasks: Sequence[Any], env: Environment, backend: PolicyBackend, tokenizer,
            config: RolloutConfig, key: jax.Array, turn_format=None) -> TreeRollout:
    """Grows one tree per task for up to `config.num_turns` turns."""
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

    started = [env.reset(task) for task in tasks]
    node_states = [s for s, _ in started]
    node_index = np.arange(len(tasks), dtype=np.int64)
    device_s = env_s = 0.0

    t0 = time.perf_counter()
    contexts = []
    for a in range(n):
        prompts = [first_ids(tokenizer, fmts[a], obs[a]) for _, obs in started]
        for p, prompt in enumerate(prompts):
            if len(prompt) >= config.max_context:
                raise ValueError(f"task {p}: agent {a}'s prompt has {len(prompt)} tokens, "
                                 f"RolloutConfig.max_context={config.max_context}")
        contexts.append(backend.begin(a, prompts))
    device_s += time.perf_counter() - t0

    turns: list[TurnRecord] = []
    context_cut = np.zeros((n, len(tasks)), bool)
    for turn in range(1, config.num_turns + 1):
        m_count = len(node_index)
        turn_key = jax.random.fold_in(key, turn)
        t0 = time.perf_counter()
        samples, after, cut_short = [], [], []
        for a in range(n):
            budgets = [min(config.max_new_tokens, config.max_context - len(row))
                       for row in contexts[a].tokens]
            s, c = backend.generate(a, contexts[a], g, budgets,
                                    jax.random.fold_in(turn_key, a))
            samples.append(s)
            after.append(c)
            # Cut by the context budget (not by the per-turn budget or a stop token).
            cut_short.append(np.array(
                [budgets[r // g] < config.max_new_tokens and len(toks) >= budgets[r // g]
                 and not _stopped(toks, stop_ids) for r, toks in enumerate(s.tokens)], bool))
        device_s += time.perf_counter() - t0

        texts = [[tokenizer.decode(_strip_stop(row, stop_ids)) for row in s.tokens]
                 for s in samples]
        truncated = np.stack([cut_short[a] | np.repeat(context_cut[a], g) for a in range(n)])
        states, actions = [], []
        for m in range(m_count):
            for j in range(j_count):
                states.append(node_states[m])
                actions.append(tuple(texts[a][m * g + joint[j, a]] for a in range(n)))
        t0 = time.perf_counter()
        results = env.step(states, actions, turn)
        env_s += time.perf_counter() - t0

        rewards = np.array([r.reward for r in results], np.float32).reshape(m_count, j_count)
        # The credit library's rule: expand iff mean_j r <= threshold (equality expands).
        expands = np.array(termination_mask(rewards, config.termination_threshold)[:, 0])
        if turn == config.num_turns:
            expands[:] = False
        names = sorted(results[0].components) if results else []
        components = {k: np.array([r.components.get(k, 0.0) for r in results],
                                  np.float32).reshape(m_count, j_count) for k in names}
        turns.append(TurnRecord(
            turn=turn, node_index=node_index,
            contexts=[contexts[a].tokens for a in range(n)],
            completions=[s.tokens for s in samples],
            logprobs=[s.logprobs for s in samples], truncated=truncated, texts=texts,
            rewards=rewards, expanded=expands,
            done=np.array([r.done for r in results], bool).reshape(m_count, j_count),
            components=components,
            observations=[[r.observations[a] for r in results] for a in range(n)],
            infos=[r.info for r in results]))
        if not expands.any():
            break

        # Children: one per joint action of each expanding node.
        parents = np.flatnonzero(expands)
        child_index = (node_index[parents][:, None] * j_count + np.arange(j_count)).ravel()
        child_results = [results[m * j_count + j] for m in parents for j in range(j_count)]
        reset = any(r.reset_context for r in child_results)
        t0 = time.perf_counter()
        contexts, context_cut = [], np.zeros((n, len(child_results)), bool)
        for a in range(n):
            rows = [m * g + joint[j, a] for m in parents for j in range(j_count)]
            if reset:
                new = [first_ids(tokenizer, fmts[a], r.observations[a]) for r in child_results]
            else:
                new = [next_ids(tokenizer, fmts[a], r.observations[a],
                                _stopped(samples[a].tokens[row], stop_ids))
                       for r, row in zip(child_results, rows)]
            base = [0 if reset else len(after[a].tokens[row]) for row in rows]
            for i, (b, toks) in enumerate(zip(base, new)):
                room = config.max_context - 1 - b  # leave room for one sampled token
                if len(toks) > room:
                    new[i] = toks[:max(room, 0)]
                    context_cut[a, i] = True
            contexts.append(backend.begin(a, new) if reset
                            else backend.extend(a, after[a], rows, new))
        device_s += time.perf_counter() - t0
        node_states = [r.state for r in child_results]
        node_index = child_index

    tree = TreeRollout(config=config, num_tasks=len(tasks), joint_index=joint, turns=turns,
                       metrics={})
    tree.metrics.update(_metrics(tree, device_s, env_s))
    return tree


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
