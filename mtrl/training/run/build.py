"""Builds a run's components from its parsed config (config/root.py RunConfig):
tokenizer, one model per agent, tasks, the environment (env.name: envs/registry.py).
It reads only the typed sections; their readers are the config package's."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax
from flax import nnx

from mtrl.data.suite import SPLITS, TaskSuite, build_suite, extra_test_splits
from mtrl.rollout.environment import Environment
from mtrl.envs.registry import build_environment
from mtrl.models import PRESETS, Transformer, load_hf_checkpoint
from mtrl.models.adapters import adapted_graphdef, init_adapters, with_adapters
from mtrl.models.lora import LoRAConfig
from mtrl.tokenizers import ByteTokenizer, load_tokenizer
from mtrl.config.fields import check_choice, ConfigErrors, build, resolve_path
from mtrl.training.run.inputs import missing_inputs
from mtrl.training.run.sections import ModelSection
from mtrl.training.run.chat import build_turn_format
from mtrl.training.run.keys import RunKeys
from mtrl.training.run.built_rules import run_built_rules


@dataclasses.dataclass
class Components:
    """A run's built objects (its config's sections are the RunConfig's, read there)."""

    tokenizer: Any
    turn_format: Any
    models: list[Transformer]  # one per agent (one if shared)
    from_hf: str | None  # checkpoint directory the weights came from
    suite: TaskSuite
    train_tasks: list
    eval_tasks: list  # validation: chooses the best checkpoint
    test_tasks: list  # evaluated once, for the chosen checkpoint ([]: none)
    env: Environment
    pool: Any  # the environment's SandboxPool (None: it runs no sandbox)
    # The suite's extra test splits (mtrl.data.suite.ExtraTestSplits), by name: each
    # evaluated beside "test", metrics "<name>_*"; {} without a test split.
    extra_tests: dict = dataclasses.field(default_factory=dict)
    # LoRA (lora.rank >= 1): `models` are the frozen bases and `adapters` each policy's
    # fresh adapters (init_adapters with the run's `lora` key stream); else None.
    adapters: list | None = None

    def policy_graphdef(self, lora: LoRAConfig) -> nnx.GraphDef:
        """The graph the policy runs in: the model's, or (LoRA) the adapted model's,
        whose adapters `lora` (the run's lora section) lays out."""
        if self.adapters is None:
            return nnx.graphdef(self.models[0])
        return adapted_graphdef(self.models[0].config, lora)

    def base_states(self) -> list:
        """Each policy's model state (LoRA: the frozen base)."""
        return [nnx.split(m)[1] for m in self.models]

    def initial_params(self) -> list:
        """Each policy's trained parameters before any update: the model's state, or
        (LoRA) its fresh adapters."""
        return self.base_states() if self.adapters is None else list(self.adapters)

    def initial_policies(self) -> list:
        """Each policy's state in policy_graphdef (LoRA: base with fresh adapters)."""
        if self.adapters is None:
            return self.base_states()
        return [with_adapters(b, a) for b, a in zip(self.base_states(), self.adapters)]

    def test_splits(self) -> dict[str, list]:
        """{"test": test tasks, **extra_tests}: what the final test evaluates ({}:
        no test split)."""
        return {"test": self.test_tasks, **self.extra_tests} if self.test_tasks else {}

    def close(self) -> None:
        self.env.close()
        if self.pool is not None:
            self.pool.close()


def build_tokenizer(spec: str, m: ModelSection):
    """config.tokenizer: "byte" (or the checkpoint's own files), or a tokenizer directory."""
    if spec != "byte":
        spec = resolve_path(spec, "tokenizer")
        if os.path.isdir(spec) and not any(os.path.exists(os.path.join(spec, name))
                                           for name in TOKENIZER_FILES):
            raise ValueError(f"config.tokenizer: {spec} has no tokenizer files "
                             f"({', '.join(TOKENIZER_FILES)})")
    elif m.hf_checkpoint and os.path.exists(
            os.path.join(os.path.expanduser(m.hf_checkpoint), "tokenizer_config.json")):
        spec = os.path.expanduser(m.hf_checkpoint)
    return load_tokenizer(spec)


# Files a Hugging Face tokenizer directory has at least one of.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def check_tokenizer(tokenizer, model_config, from_hf: str | None) -> None:
    """The tokenizer fits the model; a checkpoint without tokenizer files whose
    vocabulary is not the byte tokenizer's is an error, not a silent byte fallback."""
    if tokenizer.vocab_size > model_config.vocab_size:
        raise ValueError(f"config.tokenizer: vocabulary {tokenizer.vocab_size} exceeds the "
                         f"model's {model_config.vocab_size}")
    if from_hf and isinstance(tokenizer, ByteTokenizer) and \
            tokenizer.vocab_size != model_config.vocab_size:
        raise ValueError(f"config.tokenizer: {from_hf} has no tokenizer files "
                         f"({', '.join(TOKENIZER_FILES)}) and its {model_config.vocab_size}-token "
                         f"vocabulary is not the byte tokenizer's; set config.tokenizer to the "
                         f"model's tokenizer directory")


def build_models(seed: int, m: ModelSection, num_policies: int
                 ) -> tuple[list[Transformer], str | None]:
    path = resolve_path(m.hf_checkpoint, "model.hf_checkpoint")
    overrides = dict(m.overrides)
    if path is not None:
        # model.dtype is the compute dtype, as for presets; the weights keep the
        # checkpoint's storage dtype (param_dtype) unless model.overrides say otherwise.
        overrides.setdefault("dtype", m.dtype)
        try:
            model = load_hf_checkpoint(path, **overrides)
        except (ValueError, FileNotFoundError) as e:
            raise ValueError(f"config.model.hf_checkpoint: {e}") from None
        # Every agent starts from the same checkpoint (separate copies when stacked).
        state = nnx.split(model)[1]
        return [model] + [nnx.merge(nnx.split(model)[0], jax.tree.map(lambda x: x.copy(), state))
                          for _ in range(num_policies - 1)], path
    if not m.preset:
        raise ValueError("config.model.hf_checkpoint: required (a local Hugging Face checkpoint "
                         "directory with config.json and *.safetensors)")
    check_choice("config.model.preset", m.preset, PRESETS)
    model_config = build(PRESETS.get(m.preset).replace, "model.overrides",
                         dtype=m.dtype, **overrides)
    keys = RunKeys.from_seed(seed)
    return [Transformer(model_config, rngs=nnx.Rngs(keys.init(a)))
            for a in range(num_policies)], None


def build_tasks(suite: TaskSuite) -> tuple[list, list, list]:
    """(train, validation, test) tasks of the suite (test may be empty)."""
    try:
        train, held, test = (suite.tasks(split) for split in SPLITS)
    except KeyError as e:
        raise ValueError(f"config.data: {e.args[0]}") from None
    except (ValueError, FileNotFoundError, OSError) as e:
        message = str(e)
        raise ValueError(message if message.startswith("config.") else f"config.data: {e}"
                         ) from None
    if not train or not held:
        raise ValueError(f"config.data: empty split (train {len(train)}, eval {len(held)})")
    return train, held, test


def build_components(run) -> Components:
    """The run's components from its parsed config (a config.RunConfig: the config
    package sits above this module, so the type is not imported here); the checks
    left here need a built object (the tokenizer, the suite's task type, and
    built_rules.py's on the environment's step info)."""
    missing = missing_inputs(  # named with what makes them, before any work
        hf_checkpoint=run.model.hf_checkpoint or "", tokenizer=run.tokenizer,
        data_name=run.data.name, data_path=run.data.path or "",
        train_ids_file=run.data.options.get("train_ids_file", "") or "")
    if missing:
        raise ConfigErrors(missing)
    tokenizer = build_tokenizer(run.tokenizer, run.model)
    fmt = build_turn_format(run.chat, tokenizer, run.num_agents)
    num_policies = 1 if run.rollout.agent_params == "shared" else run.num_agents
    models, from_hf = build_models(run.seed, run.model, num_policies)
    check_tokenizer(tokenizer, models[0].config, from_hf)
    adapters = None
    if run.lora.enabled:
        keys = RunKeys.from_seed(run.seed)
        adapters = [init_adapters(m.config, run.lora, keys.lora(a))
                    for a, m in enumerate(models)]
    try:
        suite = build_suite(run.data, run.seed)
    except ValueError as e:  # the family's own checks (FamilyConfig) name no field
        message = str(e)
        raise ValueError(message if message.startswith("config.") else f"config.data: {e}"
                         ) from None
    train_tasks, eval_tasks, test_tasks = build_tasks(suite)
    extra_tests = extra_test_splits(suite) if test_tasks else {}
    built = build_environment(run.env, run.rollout.num_turns, run.data.name, suite, tokenizer)
    env, pool = built.env, built.pool
    lines = run_built_rules(run, env)  # what the config needs of the built environment
    if lines:
        built.close()
        raise ConfigErrors(lines)
    return Components(tokenizer=tokenizer, turn_format=fmt, models=models, from_hf=from_hf,
                      suite=suite, train_tasks=train_tasks, eval_tasks=eval_tasks,
                      test_tasks=test_tasks, env=env, pool=pool, extra_tests=extra_tests,
                      adapters=adapters)
