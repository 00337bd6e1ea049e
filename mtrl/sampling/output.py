"""What the sampler returns."""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp


@flax.struct.dataclass
class SampleOutput:
    """Generated tokens and their log-probabilities, right-padded to T = max_new_tokens.

    Two log-probabilities are recorded for every generated token y_t, with z_t the raw
    float32 logits the model produced for that position (conditioned on the prompt and
    y_<t, read through the KV cache):

      logprobs         log softmax(z_t)[y_t]: the policy pi_theta(y_t | context) itself,
                       at temperature 1 with no top-k / top-p. This is what a trainer's
                       full forward recomputes, so it is the behaviour log-probability
                       for importance ratios pi_new / pi_old when sampling used
                       temperature 1 and no filters.
      sample_logprobs  log q(y_t | context), q the distribution that was actually sampled:
                       softmax of z_t / temperature after top-k and top-p
                       (`filters.filter_logits`). 0 for greedy decoding (a point mass).
                       Use it for exact off-policy corrections when sampling used
                       temperature != 1 or filters.

    Entries at t >= lengths[b] are padding: tokens = pad_id, both log-probs 0.
    """

    tokens: jax.Array  # [B, T] int32, generated ids; pad_id after the end of each row
    logprobs: jax.Array  # [B, T] float32, log pi_theta(y_t): raw logits, temperature 1
    sample_logprobs: jax.Array  # [B, T] float32, log q(y_t) under the sampling distribution
    lengths: jax.Array  # [B] int32, tokens generated per row (a stop token counts)
    finished_by_stop: jax.Array  # [B] bool, row ended on a stop token (not its budget)

    @property
    def batch(self) -> int:
        return self.tokens.shape[0]

    @property
    def max_new_tokens(self) -> int:
        return self.tokens.shape[1]

    def mask(self) -> jax.Array:
        """[B, T] bool: True at generated (non-padding) positions."""
        return jnp.arange(self.max_new_tokens)[None, :] < self.lengths[:, None]

    def rows(self, rows) -> "SampleOutput":
        """The given rows (an index array or a slice), e.g. to drop bucket padding."""
        return jax.tree.map(lambda x: x[rows], self)

    def to_lists(self) -> list[list[int]]:
        """Host-side token lists, each cut at its row's length."""
        tokens = jax.device_get(self.tokens)
        lengths = jax.device_get(self.lengths)
        return [tokens[b, : lengths[b]].tolist() for b in range(tokens.shape[0])]
