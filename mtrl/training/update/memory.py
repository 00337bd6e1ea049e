"""What a run's train step needs in memory, checked when the run is built.

The step tree of T turns with G generations (J joint actions per node: G in `align`,
G^N in `cross`) holds, per agent,

    R = G · Σ_{t<T} min(P · J^t, max_nodes_per_turn)     rows (P = tasks_per_step)

of up to L = rollout.max_context tokens. The update runs all N agents at once (vmapped),
over K = R / train.minibatches rows (padded to a power of two R' when unpacked).

Attention. With the chunked attention (ModelConfig.attention "auto" off cuDNN, or
"chunked": mtrl/models/attention.py) the step's memory is linear in its tokens W:

    bytes ≈ N · W · 4 B · (hidden + intermediate) · (6.7 · layers_kept + 6.5)

(layers_kept = 1 with train.remat=full, else num_layers). The coefficients are XLA's
own count (compiled memory_analysis, bench/memory.py) for math.py's model
(hidden 128, intermediate 512), 32 bins of 1024 tokens per agent: 1.66 GB per agent
with 2 layers, 2.78 GB with 4 (remat=full: 0.80 GB, which the formula overstates by a
third). With attention "xla" or "reference" the backward keeps [K, heads, L, L] float32
scores, about 5.5 buffers per layer (math.py, one agent, packing=none: XLA asked for
45.8 GB), added as

    5.5 · layers_kept · N · K · heads · L² · 4 B

Unpacked (train.packing=none) W = R' / minibatches · L exactly, and a step that cannot
fit is refused before SFT, in one line with the numbers and the knobs. Packed (rows,
tree: the default) W is the tokens the bins really hold, known only once the policy
has written them: R · L (nothing shared) bounds it and is printed at the build; each
packed minibatch (P bins of S slots per agent, W = P · S) is then checked by
`packed_step_guard` before its update runs, and refused in the same one line instead
of an out-of-memory error. The README's two-agent math run held 2 x ~32k tokens, not
2 x 172k (BENCHMARKS.md, "Memory").
"""

from __future__ import annotations

import os
from typing import Callable

GB = 1e9
# bytes per token = 4 B · (hidden + intermediate) · (PER_LAYER · layers_kept + PER_TOKEN)
PER_LAYER, PER_TOKEN = 6.7, 6.5  # measured, see the module docstring
SCORE_BUFFERS_PER_LAYER = 5.5  # measured, see the module docstring


def step_rows(tasks_per_step: int, num_generations: int, num_turns: int, num_agents: int,
              joint_mode: str, max_nodes_per_turn: int) -> int:
    """R: one agent's training rows in one step's tree when nothing terminates."""
    joint = num_generations ** num_agents if joint_mode == "cross" else num_generations
    return sum(min(tasks_per_step * joint ** t, max_nodes_per_turn) * num_generations
               for t in range(num_turns))


def token_bytes(tokens: float, model_config, layers_kept: int) -> float:
    """The chunked layout's bytes for `tokens` tokens (all agents) in one update."""
    width = model_config.hidden_size + model_config.intermediate_size
    return tokens * 4.0 * width * (PER_LAYER * layers_kept + PER_TOKEN)


def score_bytes(sequences: float, length: int, num_agents: int, model_config,
                layers_kept: int) -> float:
    """The [sequences, heads, L, L] float32 scores the xla/reference backward keeps."""
    return (SCORE_BUFFERS_PER_LAYER * layers_kept * num_agents * sequences
            * model_config.num_heads * length ** 2 * 4.0)


def step_bytes(rows: int, num_agents: int, minibatches: int, context: int, model_config,
               layers_kept: int, chunked: bool, padded: bool = True) -> float:
    """The estimate of the module docstring for K = rows / minibatches rows of `context`
    tokens per agent (rows padded to a power of two first when `padded`)."""
    if padded:
        rows = 1 << max(0, (rows - 1).bit_length())
    per_agent_rows = rows / minibatches
    need = token_bytes(num_agents * per_agent_rows * context, model_config, layers_kept)
    if not chunked:
        need += score_bytes(per_agent_rows, context, num_agents, model_config, layers_kept)
    return need


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


def _attention(model_config, backend: str | None) -> tuple[str, bool]:
    """(the attention the update runs, whether its memory is linear in the tokens)."""
    from mtrl.models.attention import resolve_implementation
    head_dim = model_config.head_dim or model_config.hidden_size // model_config.num_heads
    attention = resolve_implementation(model_config.attention, model_config.compute_dtype,
                                       head_dim, backend)
    return attention, attention in ("chunked", "cudnn")


KNOBS = ("lower train.tasks_per_step, rollout.num_generations or rollout.max_context, or "
         "raise train.minibatches, or set train.remat=full")


def check_step_memory(rollout, train, model_config, available: float | None = None,
                      backend: str | None = None) -> str:
    """One line: the step tree's size and its train step's memory. Raises a one-line
    ValueError naming the knobs when an unpacked step cannot fit."""
    rows = step_rows(train.tasks_per_step, rollout.num_generations, rollout.num_turns,
                     rollout.num_agents, rollout.joint_mode, rollout.max_nodes_per_turn)
    kept = 1 if train.remat == "full" else model_config.num_layers
    attention, chunked = _attention(model_config, backend)
    packed = train.packing != "none"
    need = step_bytes(rows, rollout.num_agents, train.minibatches, rollout.max_context,
                      model_config, kept, chunked, padded=not packed)
    available = machine_bytes() if available is None else available
    where = ("at most, if no prefix were shared (train.packing="
             f"{train.packing}: the real tokens decide)" if packed else "unpacked")
    line = (f"train step: {rows} rows per agent x {rollout.num_agents} agents of up to "
            f"{rollout.max_context} tokens, {attention} attention; ~{need / GB:.1f} GB "
            f"{where} of {available / GB:.1f} GB")
    if not packed and need > available:
        knobs = "use train.packing=tree, or " + KNOBS
        if not chunked:
            knobs += ", or model attention 'chunked' (model.overrides)"
        raise ValueError(f"{line}: cannot fit; {knobs}")
    return line


class StepMemoryError(ValueError):
    """A packed minibatch's update cannot fit in memory (raised before it runs)."""


def packed_step_guard(train, model_config, num_agents: int, available: float | None = None,
                      backend: str | None = None) -> Callable[[int, int], None] | None:
    """For packed updates (train.packing rows or tree; None when unpacked): a check
    `guard(bins, slots)` of one packed minibatch, P = bins of S = slots tokens per agent,
    run before its update. Raises a one-line StepMemoryError with the numbers and the knobs
    when the estimate for W = N · P · S tokens (plus the [P, heads, S, S] scores when
    the attention is not chunked) exceeds the machine's memory."""
    if train.packing == "none":
        return None
    kept = 1 if train.remat == "full" else model_config.num_layers
    attention, chunked = _attention(model_config, backend)
    available = machine_bytes() if available is None else available

    def guard(bins: int, slots: int) -> None:
        need = token_bytes(num_agents * bins * slots, model_config, kept)
        if not chunked:
            need += score_bytes(bins, slots, num_agents, model_config, kept)
        if need > available:
            raise StepMemoryError(
                f"train step: a packed minibatch of {num_agents} agents x {bins} bins of "
                f"{slots} tokens ({train.packing} packing), {attention} attention, needs "
                f"~{need / GB:.1f} GB of {available / GB:.1f} GB: cannot fit; {KNOBS}")

    return guard
