"""Named random streams of a run, split once from the root key (big_vision style).

    root = key(seed);  init, sft, rollout, ppo, eval, lora = split(root, 6)

Each consumer folds its own indices into its own stream, so no two consumers can
draw the same key, whatever the step counts: SFT of agent a, phase p uses
fold_in(fold_in(sft, a), p); RL step s rolls out with fold_in(rollout, s), shuffles
its PPO minibatches with fold_in(ppo, s) and evaluates with fold_in(eval, s); model
initialisation of agent a uses fold_in(init, a), its LoRA adapters fold_in(lora, a)
(appended last: jax's split gives the first five streams the keys they had before
there were six, so a full fine-tuning run draws what it drew). (Offsets in one shared stream, as
before, collided: SFT agent 0's key equalled RL step 555's.) A resumed run folds the
same indices, so it repeats an uninterrupted one.
"""

from __future__ import annotations

import dataclasses

import jax

from mtrl.config.fields import check_int

STREAMS = ("init", "sft", "rollout", "ppo", "eval", "lora")


@dataclasses.dataclass(frozen=True)
class RunKeys:
    """The run's named streams (typed PRNG keys)."""

    streams: dict

    @classmethod
    def from_seed(cls, seed: int) -> "RunKeys":
        check_int("seed", seed)
        keys = jax.random.split(jax.random.key(seed), len(STREAMS))
        return cls(dict(zip(STREAMS, keys)))

    def init(self, agent: int) -> jax.Array:
        return jax.random.fold_in(self.streams["init"], agent)

    def lora(self, agent: int) -> jax.Array:
        """Agent `agent`'s fresh adapters (mtrl.models.adapters.init_adapters)."""
        return jax.random.fold_in(self.streams["lora"], agent)

    def sft(self, agent: int, phase: int) -> jax.Array:
        return jax.random.fold_in(jax.random.fold_in(self.streams["sft"], agent), phase)

    def rollout(self, step: int) -> jax.Array:
        return jax.random.fold_in(self.streams["rollout"], step)

    def ppo(self, step: int) -> jax.Array:
        return jax.random.fold_in(self.streams["ppo"], step)

    def eval(self, step: int) -> jax.Array:
        return jax.random.fold_in(self.streams["eval"], step)

    def test(self, step: int) -> jax.Array:
        """The test split's evaluation of step `step`'s checkpoint: inside the eval
        stream, folded with 2 (evaluate() folds 1 for its sampled episodes)."""
        return jax.random.fold_in(self.eval(step), 2)
