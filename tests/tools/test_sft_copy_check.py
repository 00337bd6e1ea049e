"""tools/sft_copy_check.py's measure: a row counts only when greedy decoding
reproduces every completion token (checked against a token-by-token greedy decode
with full forwards, a second implementation)."""

import dataclasses

import jax.numpy as jnp
import numpy as np
from flax import nnx

from mtrl.models import PRESETS, Transformer
from mtrl.training.sft.sft import SFTExamples
from tools.sft_copy_check import exact_fraction

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)
PROMPTS = [[97, 98, 10], [99, 10, 101], [120, 121, 10]]
NEW = 4


def greedy(model, prompt, new_tokens):
    ids = list(prompt)
    for _ in range(new_tokens):
        tokens = jnp.asarray([ids])
        hidden, _ = model.hidden_states(tokens, token_mask=jnp.ones_like(tokens, bool))
        ids.append(int(jnp.argmax(model.logits(hidden)[0, -1])))
    return ids


def rows(sequences, prompt_len):
    tokens = np.asarray(sequences, np.int32)
    loss_mask = np.zeros(tokens.shape, bool)
    loss_mask[:, prompt_len:] = True
    return SFTExamples(tokens, np.ones(tokens.shape, bool), loss_mask)


def test_a_row_counts_when_greedy_reproduces_all_of_it():
    model = Transformer(CONFIG, rngs=nnx.Rngs(3))
    graphdef, params = nnx.split(model)
    decoded = [greedy(model, p, NEW) for p in PROMPTS]
    assert exact_fraction(graphdef, params, rows(decoded, 3)) == (1.0, 3)
    # The last completion token of row 0 changed, the first of row 2: both fail.
    changed = [list(r) for r in decoded]
    changed[0][-1] = (changed[0][-1] + 1) % CONFIG.vocab_size
    changed[2][3] = (changed[2][3] + 1) % CONFIG.vocab_size
    share, n = exact_fraction(graphdef, params, rows(changed, 3))
    assert n == 3 and abs(share - 1 / 3) < 1e-9
    # limit: only the first rows are checked.
    assert exact_fraction(graphdef, params, rows(decoded, 3), limit=2) == (1.0, 2)
