"""The one-layer byte model and three demonstration pairs the SFT tests train on."""

import dataclasses

from mtrl.models import PRESETS
from mtrl.tokenizers import ByteTokenizer

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)
TOKENIZER = ByteTokenizer()
EOS, PAD = TOKENIZER.eos_id, TOKENIZER.pad_id
PAIRS = [("a", "xyz"), ("b", "pq"), ("c", "hello")]
MAX_LEN = 16
