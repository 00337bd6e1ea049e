"""Fixtures for the model tests: tiny random transformers checkpoints on disk."""

import pytest
import torch
import transformers

VOCAB = 300

# Three tiny architectures covering every family feature: Llama 3 rope scaling with
# untied embeddings and attention/MLP biases, Qwen2 q/k/v bias with tied embeddings,
# Qwen3 q/k norm with head_dim != hidden / heads.
HF_CONFIGS = {
    "llama": lambda: transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=True, mlp_bias=True,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 16},
        bos_token_id=1, eos_token_id=2),
    "qwen2": lambda: transformers.Qwen2Config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        eos_token_id=3),
    "qwen3": lambda: transformers.Qwen3Config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=24, max_position_embeddings=256,
        tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 1e6},
        eos_token_id=3),
}
HF_CLASSES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
              "qwen3": "Qwen3ForCausalLM"}


def build_hf_model(family: str, seed: int = 0):
    """A random transformers model; every parameter (norms and biases included) gets
    noise so that no term of the forward pass is trivially zero or one."""
    torch.manual_seed(seed)
    config = HF_CONFIGS[family]()
    config._attn_implementation = "eager"
    model = getattr(transformers, HF_CLASSES[family])(config).eval()
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.1 * torch.randn_like(param))
    return model


@pytest.fixture(scope="module", params=sorted(HF_CONFIGS))
def hf_checkpoint(request, tmp_path_factory):
    """(family, transformers model, directory holding its save_pretrained output)."""
    family = request.param
    model = build_hf_model(family)
    directory = tmp_path_factory.mktemp(f"hf_{family}")
    model.save_pretrained(directory)
    return family, model, directory


@pytest.fixture(scope="session")
def make_hf_model():
    """build_hf_model(family, seed) (test modules cannot import conftest under
    --import-mode=importlib)."""
    return build_hf_model
