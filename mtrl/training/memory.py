"""What a run's train step needs in memory, checked when the run is built.

The policy is small (0.5M parameters in math.py) but a train step is not: attention
is materialized in float32, [rows, heads, L, L] per layer, and XLA keeps several such
buffers per layer for the backward pass (models/layers.py). The step tree of T turns
with G generations (J joint actions per node: G in `align`, G^N in `cross`) holds,
per agent,

    R = G · Σ_{t<T} min(P · J^t, max_nodes_per_turn)     rows (P = tasks_per_step)

Unpacked (train.packing=none) the rows are padded to a power of two R' and to
L = rollout.max_context tokens, and a step needs about

    5.5 · layers_kept · N · (R' / minibatches) · heads · L² · 4 bytes

(layers_kept = 1 with train.remat=full, else num_layers). The 5.5 is measured: math.py
with one agent and packing=none (R = 168 -> R' = 256, 2 layers, 4 heads, L = 1024)
asked XLA for 45.8 GB, 5.3 such buffers per layer; the issue's two-agent run asked for
84.5 GB (this formula: 94.5 GB). Such a run is refused before SFT, in one line with
the numbers and the knobs, instead of failing after SFT.

Packed (rows, tree: the default) a step holds only the tokens the rows really have,
in bins of the smallest budget that fits the longest row; that depends on the lengths
the policy writes, so the bound above is printed but not enforced. Measured peaks on math.py (whole
process, 2 SFT updates and 1 RL step, 2-core CPU): one agent 6.6 GB, 4.1 GB with
train.remat=full; two agents (the README's correctness command) with
train.remat=full still passed 7.6 GB, where the measurement was stopped.
"""

from __future__ import annotations

import os

GB = 1e9
BUFFERS_PER_LAYER = 5.5  # measured, see the module docstring


def step_rows(tasks_per_step: int, num_generations: int, num_turns: int, num_agents: int,
              joint_mode: str, max_nodes_per_turn: int) -> int:
    """R: one agent's training rows in one step's tree when nothing terminates."""
    joint = num_generations ** num_agents if joint_mode == "cross" else num_generations
    return sum(min(tasks_per_step * joint ** t, max_nodes_per_turn) * num_generations
               for t in range(num_turns))


def unpacked_step_bytes(rows: int, num_agents: int, minibatches: int, heads: int,
                        context: int, layers_kept: int) -> float:
    padded = 1 << max(0, (rows - 1).bit_length())  # rows are padded to a power of two
    return (BUFFERS_PER_LAYER * layers_kept * num_agents * (padded / minibatches) * heads
            * context ** 2 * 4.0)


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


def check_step_memory(rollout, train, model_config, available: float | None = None) -> str:
    """One line: the step tree's size and its unpacked attention memory. Raises a
    one-line ValueError naming the knobs when an unpacked step cannot fit."""
    rows = step_rows(train.tasks_per_step, rollout.num_generations, rollout.num_turns,
                     rollout.num_agents, rollout.joint_mode, rollout.max_nodes_per_turn)
    kept = 1 if train.remat == "full" else model_config.num_layers
    need = unpacked_step_bytes(rows, rollout.num_agents, train.minibatches,
                               model_config.num_heads, rollout.max_context, kept)
    available = machine_bytes() if available is None else available
    packed = train.packing != "none"
    line = (f"train step: {rows} rows per agent x {rollout.num_agents} agents of up to "
            f"{rollout.max_context} tokens; unpacked attention ~{need / GB:.1f} GB of "
            f"{available / GB:.1f} GB" + (f" (train.packing={train.packing}: less, by the "
                                          "rows' real lengths)" if packed else ""))
    if not packed and need > available:
        raise ValueError(f"{line}: cannot fit; use train.packing=tree, or lower "
                         "train.tasks_per_step, rollout.num_generations or "
                         "rollout.max_context, or raise train.minibatches, or set "
                         "train.remat=full")
    return line
