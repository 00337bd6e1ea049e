"""What a run's train step needs in memory, checked when the run is built.

The policy is small (0.5M parameters in math.py) but a train step is not: the
attention scores of every training row are materialized in float32, [rows, heads,
L, L] per layer, scores and probabilities both, and kept for the backward pass
(models/layers.py). The step tree
of T turns with G generations (J joint actions per node: G in `align`, G^N in
`cross`) holds, per agent,

    R = P · G · Σ_{t<T} min(J^t, max_nodes_per_turn / P)     rows (P = tasks_per_step)

of up to L = rollout.max_context tokens, so one step's stored attention is at most

    2 · layers_kept · N · (R / minibatches) · heads · L² · 4 bytes

(layers_kept = 1 with train.remat=full, else num_layers). It is a bound: tree packing
shares prefixes and lowers it (math.py, one agent: R = 2·4·(1 + 4 + 16) = 168 rows,
2 layers, 4 heads, L = 1024, a bound of 11.3 GB; measured peak 6.6 GB for the whole
process). With 2 agents the bound doubles to 22.5 GB, which is why the README's
two-agent math command was killed at 16 GB. A run whose bound exceeds the machine's
memory is refused before SFT, in one line with the numbers and the knobs, instead
of being killed after SFT.
"""

from __future__ import annotations

import os

GB = 1e9


def step_rows(tasks_per_step: int, num_generations: int, num_turns: int, num_agents: int,
              joint_mode: str, max_nodes_per_turn: int) -> int:
    """R: one agent's training rows in one step's tree when nothing terminates."""
    joint = num_generations ** num_agents if joint_mode == "cross" else num_generations
    rows = 0
    for t in range(num_turns):
        nodes = min(tasks_per_step * joint ** t, max_nodes_per_turn)
        rows += nodes * num_generations
    return rows


def attention_bytes(rows: int, num_agents: int, minibatches: int, heads: int,
                    context: int, layers_kept: int) -> float:
    return 2.0 * layers_kept * num_agents * (rows / minibatches) * heads * context ** 2 * 4.0


def machine_bytes() -> float:
    """The memory the train step can use: the first device's limit on an accelerator,
    the host's physical memory on CPU."""
    import jax
    device = jax.devices()[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if stats.get("bytes_limit"):
            return float(stats["bytes_limit"])
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def step_memory_line(rollout, train, model_config, available: float | None = None
                     ) -> tuple[str, bool]:
    """(one line: the tree size, the estimate and the memory; whether it fits)."""
    rows = step_rows(train.tasks_per_step, rollout.num_generations, rollout.num_turns,
                     rollout.num_agents, rollout.joint_mode, rollout.max_nodes_per_turn)
    kept = 1 if train.remat == "full" else model_config.num_layers
    need = attention_bytes(rows, rollout.num_agents, train.minibatches,
                           model_config.num_heads, rollout.max_context, kept)
    available = machine_bytes() if available is None else available
    line = (f"train step: {rows} rows per agent x {rollout.num_agents} agents of up to "
            f"{rollout.max_context} tokens; attention kept for backward <= {need / GB:.1f} GB "
            f"(2 x {kept} layers x {model_config.num_heads} heads x L^2 x 4 B per row, "
            f"{train.minibatches} minibatches) of {available / GB:.1f} GB")
    return line, need <= available


def check_step_memory(rollout, train, model_config, available: float | None = None) -> str:
    """The estimate's line; a one-line ValueError naming the knobs when it cannot fit."""
    line, fits = step_memory_line(rollout, train, model_config, available)
    if not fits:
        raise ValueError(f"{line}: cannot fit; lower train.tasks_per_step, "
                         "rollout.num_generations or rollout.max_context, or raise "
                         "train.minibatches, or set train.remat=full")
    return line
