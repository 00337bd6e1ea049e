"""LoRA adapters as parameter states: an adapted model is its base's state plus the
adapters' (mtrl/models/lora.py has the layer and the formula).

    adapters = init_adapters(config, lora, key)       # A uniform, B = 0: the base's function
    graphdef = adapted_graphdef(config, lora)         # the adapted model's graph
    model    = nnx.merge(graphdef, with_adapters(base_state, adapters))
    merged   = merged_state(base_state, adapters, lora)   # W + s·A·B, the base's layout

The base state is never copied: `with_adapters` puts the same arrays beside the adapters,
so a trainer holds one copy of the base weights for the policy, the KL reference (the
base alone) and the sampler. Paths of the adapter leaves follow the stacked layout of
transformer.py: layers.self_attn.q_proj.lora_a [layers, in, r], .lora_b [layers, r, out].
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import nnx

from mtrl.models.config import ModelConfig
from mtrl.models.lora import LoRAConfig, LoRAParam
from mtrl.models.transformer import Transformer


def _adapted_config(config: ModelConfig, lora: LoRAConfig) -> ModelConfig:
    if not isinstance(lora, LoRAConfig) or not lora.enabled:
        raise ValueError(f"need a LoRAConfig with rank >= 1, got {lora!r}")
    if config.lora is not None:
        raise ValueError("config already carries adapters; pass the base model's config")
    return config.replace(lora=lora)


@functools.lru_cache(maxsize=16)
def _abstract_adapted(config: ModelConfig, lora: LoRAConfig):
    """(graphdef, abstract adapter state) of the adapted model (shapes only)."""
    abstract = nnx.eval_shape(lambda: Transformer(_adapted_config(config, lora),
                                                  rngs=nnx.Rngs(0)))
    graphdef, adapters, _ = nnx.split(abstract, LoRAParam, ...)
    return graphdef, adapters


def adapted_graphdef(config: ModelConfig, lora: LoRAConfig) -> nnx.GraphDef:
    """The graph of `config`'s model with adapters per `lora` (one object per pair, so
    jitted functions that take it as a static argument compile once)."""
    return _abstract_adapted(config, lora)[0]


def init_adapters(config: ModelConfig, lora: LoRAConfig, key: jax.Array) -> nnx.State:
    """Fresh adapters for `config`'s model: every A uniform in ±1/√in (its own key,
    folded from `key` by leaf index), every B zero. float32, stacked over layers."""
    abstract = _abstract_adapted(config, lora)[1]
    paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(abstract)[0]]
    leaves = []
    for index, (path, leaf) in enumerate(zip(paths, jax.tree.leaves(abstract))):
        name = [k.key for k in path if isinstance(k, jax.tree_util.DictKey)][-1]
        if name == "lora_a":
            bound = 1.0 / float(leaf.shape[-2]) ** 0.5
            leaves.append(jax.random.uniform(jax.random.fold_in(key, index), leaf.shape,
                                             jnp.float32, -bound, bound))
        elif name == "lora_b":
            leaves.append(jnp.zeros(leaf.shape, jnp.float32))
        else:
            raise ValueError(f"unexpected adapter leaf {name!r}")
    return jax.tree.unflatten(jax.tree.structure(abstract), leaves)


def split_adapters(state: nnx.State) -> tuple[nnx.State, nnx.State]:
    """(adapters, base) of an adapted model's state (the LoRAParam leaves and the rest)."""
    return nnx.split_state(state, LoRAParam, ...)


def with_adapters(base: nnx.State, adapters: nnx.State) -> nnx.State:
    """The adapted model's state: the base's arrays (not copied) beside the adapters."""
    return nnx.merge_state(base, adapters)


def adapt(model: Transformer, lora: LoRAConfig, key: jax.Array) -> Transformer:
    """`model` with fresh adapters (init_adapters): the same function, sharing its
    weights."""
    base = nnx.split(model)[1]
    return nnx.merge(adapted_graphdef(model.config, lora),
                     with_adapters(base, init_adapters(model.config, lora, key)))


@functools.partial(jax.jit, static_argnums=2)
def merged_state(base: nnx.State, adapters: nnx.State, lora: LoRAConfig) -> nnx.State:
    """The base's layout with each adapted kernel replaced by W + s·A·B (float32 sum,
    stored in W's dtype): the adapted model's function in the base model's graph (the
    Hugging Face export). New arrays; the inputs are unchanged."""
    flat_adapters = dict(nnx.to_flat_state(adapters))
    out = []
    for path, variable in nnx.to_flat_state(base):
        if path[-1] == "kernel" and path[:-1] + ("lora_a",) in flat_adapters:
            a = flat_adapters[path[:-1] + ("lora_a",)][...]
            b = flat_adapters[path[:-1] + ("lora_b",)][...]
            kernel = variable[...]
            delta = jnp.einsum("...ir,...ro->...io", a, b, preferred_element_type=jnp.float32)
            merged = (kernel.astype(jnp.float32) + lora.scale * delta).astype(kernel.dtype)
            variable = variable.replace(merged)
        out.append((path, variable))
    return nnx.from_flat_state(out)


def adapter_count(adapters: nnx.State) -> int:
    """Trained parameters of the adapters."""
    return int(sum(x.size for x in jax.tree.leaves(adapters)))


def lora_report(lora: LoRAConfig, adapters: nnx.State, config: ModelConfig) -> str:
    """One line for the start of a run: the adapters and what share of the model they
    train."""
    trained, total = adapter_count(adapters), config.num_params()

    def count(n: int) -> str:
        return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n:,}"

    return (f"lora: rank {lora.rank}, alpha {lora.alpha:g} (scale {lora.scale:g}) on "
            f"{', '.join(lora.targets)}: {count(trained)} trained parameters per policy "
            f"({100 * trained / total:.2f}% of the frozen base's {count(total)})")
