"""The train step's metrics: per-agent values reduced over agents (in the jitted step),
and the host-side check of the NaN guard's flags (check_finite). What each metric
means is in train_step.py's docstring."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np


def reduce_over_agents(name: str, values: jax.Array) -> jax.Array:
    """One agent-free value of metric `name` from its [N] per-agent values: min for
    `*_min`, max for `*_max` and the nonfinite flags, sum for `num_tokens`, mean otherwise."""
    if name.endswith("_min"):
        return jnp.min(values)
    if name.endswith("_max") or name.startswith("nonfinite"):
        return jnp.max(values)
    if name == "num_tokens":
        return jnp.sum(values)
    return jnp.mean(values)


def flatten_metrics(per_agent: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
    """Scalars from [N] per-agent metrics: `name` reduced over agents, and `name/agent{a}`."""
    out: dict[str, jax.Array] = {}
    for name, values in per_agent.items():
        out[name] = reduce_over_agents(name, values)
        for a in range(values.shape[0]):
            out[f"{name}/agent{a}"] = values[a]
    return out


_CHECKED_PREFIXES = ("loss", "grad_norm")


def check_finite(metrics: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
    """Raises FloatingPointError when a step's metrics flag a non-finite loss or gradient.

    Accepts one step's metrics or a list of them (ppo_update's). The message names the
    offending metrics (per agent where available, e.g. `loss/agent1 = inf`) and says
    that the update was skipped, so the parameters are still those before that step.
    """
    if not isinstance(metrics, Mapping):
        for index, step_metrics in enumerate(metrics):
            try:
                check_finite(step_metrics)
            except FloatingPointError as error:
                raise FloatingPointError(f"update {index} of this batch: {error}") from None
        return
    host = {name: float(np.asarray(value)) for name, value in metrics.items()
            if name == "finite" or name.startswith(_CHECKED_PREFIXES)}
    bad = {name: value for name, value in host.items()
           if name.startswith(_CHECKED_PREFIXES) and not np.isfinite(value)}
    if not bad and host.get("finite", 1.0) == 1.0:
        return
    per_agent = {name: value for name, value in bad.items() if "/agent" in name}
    named = per_agent or bad
    what = ", ".join(f"{name} = {value}" for name, value in sorted(named.items()))
    raise FloatingPointError(
        f"non-finite training step ({what or 'finite = 0'}); the update was skipped, "
        "parameters and optimizer state are unchanged")
