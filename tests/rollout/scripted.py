"""Deterministic stand-ins for a policy, an environment and a tokenizer, so trees
can be rebuilt by brute force and checked branch by branch."""

from __future__ import annotations

import zlib

import numpy as np

from mtrl.envs.base import Environment, StepResult
from mtrl.rollout.backend import Contexts, PolicyBackend, Samples

EOS = 3


def digest(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


class CharTokenizer:
    eos_id = EOS
    pad_id = 0

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids) -> str:
        return "".join(chr(i) for i in ids if i != EOS)


def scripted_completion(agent: int, context: list[int], g: int) -> list[int]:
    """The g-th completion of `agent` after `context`: a function of the context only."""
    return [ord(c) for c in f"<a{agent}:{digest(agent, tuple(context)) % 997}:{g}>"] + [EOS]


class ScriptedBackend(PolicyBackend):
    """Histories as plain token lists; completions from `scripted_completion`."""

    def __init__(self):
        self.calls = []

    def begin(self, agent, prompts):
        return Contexts(tokens=[list(p) for p in prompts])

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        self.calls.append(("generate", agent, len(contexts.tokens)))
        tokens, logprobs, histories = [], [], []
        for row, budget in zip(contexts.tokens, max_new_tokens):
            for g in range(num_samples):
                comp = scripted_completion(agent, row, g)[:budget]
                tokens.append(comp)
                logprobs.append(-np.ones(len(comp), np.float32))
                histories.append(row + comp)
        return Samples(tokens=tokens, logprobs=logprobs), Contexts(tokens=histories)

    def extend(self, agent, contexts, rows, new_tokens):
        self.calls.append(("extend", agent, len(rows)))
        return Contexts(tokens=[contexts.tokens[r] + list(t) for r, t in zip(rows, new_tokens)])


def scripted_reward(actions: tuple[str, ...], turn: int) -> float:
    return (digest(actions, turn) % 5) / 4.0


class ScriptedEnv(Environment):
    """State = the branch's joint actions so far; observations name the branch."""

    def __init__(self, num_agents: int, reward_fn=scripted_reward):
        self.num_agents = num_agents
        self.reward_fn = reward_fn

    def reset(self, task):
        return (task, ()), tuple(f"task {task} agent {a}" for a in range(self.num_agents))

    def step(self, states, actions, turn):
        out = []
        for (task, history), action in zip(states, actions):
            branch = history + (action,)
            obs = tuple(f"obs t{turn} a{a} {digest(task, branch) % 10007}"
                        for a in range(self.num_agents))
            reward = self.reward_fn(action, turn)
            out.append(StepResult(reward=reward, done=reward == 1.0, observations=obs,
                                  state=(task, branch), components={"scripted": reward}))
        return out
