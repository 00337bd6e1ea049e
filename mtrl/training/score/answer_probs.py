"""IGPO's signal: the policy's probability of the ground-truth answer after each turn.

IGPO (Wang et al. 2025) rewards a turn by how much it raised the policy's belief in
the true answer. An environment that knows the answer reports it as step info
`truth` (math and tool environments); after the rollout the trainer scores it with a
teacher-forced forward pass of each agent's current policy, batched over every step
of the tree, and writes what the `igpo` estimator reads (docs/methods.md):

  answer_logprob        m_t = (1/L) Σ_i log π(a_i | h_t, c, a_<i)
  answer_logprob_prior  m_0 = (1/L) Σ_i log π(a_i | h_0, b, a_<i)     (the task's)

with a = the tokens of `truth` (L of them), h_t = the agent's history after turn t
on the step's branch, turn t's observation included (its context at turn t, its
completion there, and the observation the environment answered it with: the tool's
output, "Try again.", the game's text; IGPO conditions the turn-t gain on the
history up to and including turn t's observation, so the information a tool call
brings is credited to the call's turn), c = the instruction ANSWER_INSTRUCTION in
the same user message as that observation, then ANSWER_PREFIX ("\\boxed{"); with a
reset context (history modes "last"/"feedback") h_t is the fresh prompt the
observation makes. h_0 = the first prompt as the agent saw it and b = ANSWER_PREFIX
(the agent answering at once). With several agents, m_t is the mean over agents, each under its
own policy. A step whose `truth` is "" (no known answer, e.g. a code task) gets 0.

Rows are right-padded to a few bucket lengths and row counts (so the jitted forward
compiles a handful of times) and run in chunks of `batch_rows`.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax.numpy as jnp
import numpy as np

from mtrl.rollout.generator import per_agent_formats
from mtrl.rollout.history import first_ids, next_ids
from mtrl.rollout.tree import TreeRollout
from mtrl.training.policy.logprobs import sequence_logprobs

ANSWER_INSTRUCTION = "Give the final answer."
ANSWER_PREFIX = "\\boxed{"
ANSWER_KEYS = ("answer_logprob", "answer_logprob_prior")
TRUTH_KEY = "truth"
MAX_SCORED_LENGTH = 4096  # longer queries keep their last tokens (the answer included)


def derived_info_keys(env_keys: frozenset) -> frozenset:
    """Step info the trainer adds for an environment reporting `env_keys`."""
    return frozenset(ANSWER_KEYS) if TRUTH_KEY in env_keys else frozenset()


def scores_answers(estimator_needs: frozenset, env_keys: frozenset) -> bool:
    """Whether the trainer must compute answer log-probs: the estimator reads them and
    the environment gives the truth instead of the values."""
    return bool(estimator_needs & set(ANSWER_KEYS)) and TRUTH_KEY in env_keys and \
        not set(ANSWER_KEYS) <= env_keys


@dataclasses.dataclass(frozen=True)
class Query:
    prefix: tuple[int, ...]  # tokens the answer is conditioned on
    answer: tuple[int, ...]  # the scored tokens


def _bucket(n: int, least: int = 64) -> int:
    size = least
    while size < n:
        size *= 2
    return size


def mean_answer_logprobs(graphdef, params, queries: Sequence[Query], pad_id: int,
                         batch_rows: int = 64) -> np.ndarray:
    """[S] float32: each query's mean log-prob of its answer tokens (0 if it has none)."""
    out = np.zeros(len(queries), np.float32)
    scored = [i for i, q in enumerate(queries) if q.answer]
    for start in range(0, len(scored), batch_rows):
        chunk = scored[start:start + batch_rows]
        rows = []
        for i in chunk:
            q = queries[i]
            keep = max(MAX_SCORED_LENGTH - len(q.answer), 1)
            rows.append((list(q.prefix[-keep:]), list(q.answer)))
        length = _bucket(max(len(p) + len(a) for p, a in rows))
        count = _bucket(len(rows), least=8)
        tokens = np.full((count, length), pad_id, np.int32)
        mask = np.zeros((count, length), bool)
        scored_mask = np.zeros((count, length), bool)
        for r, (prefix, answer) in enumerate(rows):
            seq = prefix + answer
            tokens[r, :len(seq)] = seq
            mask[r, :len(seq)] = True
            scored_mask[r, len(prefix):len(seq)] = True
        logp = np.asarray(sequence_logprobs(graphdef, params, jnp.asarray(tokens),
                                            jnp.asarray(mask)))
        means = (logp * scored_mask).sum(axis=1) / np.maximum(scored_mask.sum(axis=1), 1)
        out[chunk] = means[:len(chunk)]
    return out


def answer_queries(tree: TreeRollout, tokenizer, turn_format, agent: int
                   ) -> tuple[list[Query], list[tuple[int, int]], list[Query]]:
    """Agent `agent`'s queries: (per step, its (turn index, info index), per task prior)."""
    g, joint = tree.config.num_generations, tree.joint_index
    prefix = tuple(tokenizer.encode(ANSWER_PREFIX))
    steps, where = [], []
    truths: dict[int, str] = {}  # task -> truth (from its turn-1 steps)
    for t, record in enumerate(tree.turns):
        for m in range(len(record.node_index)):
            context = record.contexts[agent][m]
            for j in range(joint.shape[0]):
                info = record.infos[m * joint.shape[0] + j]
                truth = str(info[TRUTH_KEY])
                if t == 0:
                    truths[int(record.node_index[m])] = truth
                completion = record.completions[agent][m * g + int(joint[j, agent])]
                observation = record.observations[agent][m * joint.shape[0] + j]
                asked = f"{observation}\n{ANSWER_INSTRUCTION}" if observation \
                    else ANSWER_INSTRUCTION
                if record.reset_context:
                    history = tuple(first_ids(tokenizer, turn_format, asked))
                else:
                    stopped = bool(completion) and completion[-1] == tokenizer.eos_id
                    history = tuple(context) + tuple(completion) + tuple(
                        next_ids(tokenizer, turn_format, asked, stopped))
                steps.append(Query(prefix=history + prefix,
                                   answer=tuple(tokenizer.encode(truth)) if truth else ()))
                where.append((t, m * joint.shape[0] + j))
    first = tree.turns[0]
    priors = []
    for task in range(tree.num_tasks):
        m = int(np.flatnonzero(first.node_index == task)[0])
        truth = truths.get(task, "")
        priors.append(Query(prefix=tuple(first.contexts[agent][m]) + prefix,
                            answer=tuple(tokenizer.encode(truth)) if truth else ()))
    return steps, where, priors


def fill_answer_logprobs(tree: TreeRollout, graphdef, agent_params: Sequence, tokenizer,
                         turn_format, batch_rows: int = 64) -> TreeRollout:
    """The tree with every step's info holding ANSWER_KEYS (module docstring).

    agent_params: one parameter state per agent, or one shared by all."""
    n = tree.config.num_agents
    step_sum = prior_sum = where = None
    for a in range(n):
        params = agent_params[a if len(agent_params) > 1 else 0]
        fmt = per_agent_formats(turn_format, n)[a]  # chat formats may differ per agent
        steps, where, priors = answer_queries(tree, tokenizer, fmt, a)
        values = mean_answer_logprobs(graphdef, params, steps + priors, tokenizer.pad_id,
                                      batch_rows)
        step_part, prior_part = values[:len(steps)], values[len(steps):]
        step_sum = step_part if step_sum is None else step_sum + step_part
        prior_sum = prior_part if prior_sum is None else prior_sum + prior_part
    step_mean, prior_mean = step_sum / n, prior_sum / n
    infos = [list(record.infos) for record in tree.turns]
    for (t, i), value in zip(where, step_mean):
        task = int(tree.turns[t].node_index[i // tree.joint_actions]) // \
            tree.joint_actions ** t
        infos[t][i] = {**infos[t][i], "answer_logprob": float(value),
                       "answer_logprob_prior": float(prior_mean[task])}
    turns = [dataclasses.replace(record, infos=turn_infos)
             for record, turn_infos in zip(tree.turns, infos)]
    return dataclasses.replace(tree, turns=turns)
