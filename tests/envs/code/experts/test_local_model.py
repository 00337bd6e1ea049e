"""LocalModelExpert driven by a tiny random mtrl model through the mtrl Sampler."""

import pytest
from flax import nnx

from mtrl.envs.code import CodeEnv, CodeEnvConfig, LocalModelExpert
from mtrl.envs.code.experts import sampler_generate
from mtrl.models import PRESETS, Transformer
from mtrl.sampling import SamplingConfig
from mtrl.tokenizers import ByteTokenizer

# Small overrides of the tiny preset keep compilation to seconds on 2 cores; the
# 128-position context makes every expert prompt (~1 kB of bytes) cut from the left.
CONFIG = PRESETS.get("tiny").replace(num_layers=1, hidden_size=64, intermediate_size=128,
                                     head_dim=16, max_position_embeddings=128)
ADD_WRONG = "```python\ndef add(a, b):\n    return a - b\n```"


@pytest.fixture(scope="module")
def expert():
    model = Transformer(CONFIG, rngs=nnx.Rngs(0))
    return LocalModelExpert.from_model(model, ByteTokenizer(), max_new_tokens=8)


def test_expert_edits_end_to_end_with_a_random_model(expert, tasks, executor):
    env = CodeEnv(CodeEnvConfig(num_agents=1, feedback_mode="expert_edits"), sandbox=executor,
                  expert=expert)
    state, _ = env.reset(tasks[0])
    first, second = env.step([state, state], [(ADD_WRONG,), (ADD_WRONG,)], turn=1)
    (obs,) = first.observations
    assert obs.startswith("An expert reviewed the previous attempt")
    assert second.observations == first.observations  # greedy: same input, same text
    code = first.state.last_verdict.analysis.program
    suggestion = expert.suggest(tasks[0], code, "- Tests: not all passed.")
    assert isinstance(suggestion, str) and len(suggestion) <= 8 * 4  # 8 byte tokens
    assert expert.suggest(tasks[0], code, "- Tests: not all passed.") == suggestion


def test_sampler_generate_takes_a_sampling_config():
    tokenizer = ByteTokenizer()
    model = Transformer(CONFIG, rngs=nnx.Rngs(0))
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=4,
                              stop_token_ids=(tokenizer.eos_id,), pad_id=tokenizer.pad_id)
    generate = sampler_generate(model, tokenizer, sampling=sampling, seed=3)
    first = generate(["a prompt", "another prompt"])
    assert len(first) == 2 and all(isinstance(text, str) for text in first)
    assert sampler_generate(model, tokenizer, sampling=sampling, seed=3)(
        ["a prompt", "another prompt"]) == first  # same seed, same draws
