"""A scripted environment that reports every step-info field a credit estimator reads
(docs/methods.md): IGPO's answer log-probs, GiGPO's anchor ids, UFO's correctness and
answer ids, SimpleTIR's void flags. Values are deterministic functions of the branch, so trees are reproducible."""

from __future__ import annotations

import dataclasses

from tests.rollout.scripted import ScriptedEnv, digest


class SignalEnv(ScriptedEnv):
    info_keys = frozenset({"answer_logprob", "answer_logprob_prior", "anchor_id", "correct",
                           "answer_id", "void"})

    def step(self, states, actions, turn):
        out = []
        for state, action, result in zip(states, actions,
                                         super().step(states, actions, turn)):
            task, history = state
            branch = history + (action,)
            info = {
                # The policy's mean log-prob of the true answer after this step.
                "answer_logprob": -0.1 * (digest(task, branch, "p") % 20),
                "answer_logprob_prior": -0.1 * (digest(task, "prior") % 20),
                # Few distinct states, so anchor groups span branches.
                "anchor_id": digest(turn, action[0][:6]) % 3,
                "correct": result.reward == 1.0,
                "answer_id": digest(action) % 2,  # repeated answers happen
                # SimpleTIR's void flag per agent: a function of the agent's text only.
                "void": tuple(digest(text, "void") % 4 == 0 for text in action),
            }
            out.append(dataclasses.replace(result, info=info))
        return out
