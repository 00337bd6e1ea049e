"""A small Llama GGUF written by the test itself (gguf package writer): the ChatML test
tokenizer's vocabulary, merges, special ids and chat template as metadata, and random
weights under llama.cpp's tensor names (one tensor Q8_0-quantized, the rest float32)."""

import json
import pathlib

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, quants

from tests.tokenizers.chatml import build_chatml_tokenizer

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 64, 128, 2, 4, 2, 16


def write_small_gguf(path: pathlib.Path, seed: int = 0) -> pathlib.Path:
    tok = build_chatml_tokenizer()
    spec = json.loads(tok.backend_tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    added = {t["content"]: t["id"] for t in spec["added_tokens"]}
    tokens = [None] * (max(list(vocab.values()) + list(added.values())) + 1)
    for text, i in list(vocab.items()) + list(added.items()):
        tokens[i] = text
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    types = [3 if t in added else 1 for t in tokens]  # 3: control token, 1: normal
    # A block of 32 for Q8_0 rows; the vocabulary is padded up to a multiple of 32.
    n_vocab = len(tokens)

    w = GGUFWriter(str(path), "llama")
    w.add_block_count(LAYERS)
    w.add_context_length(256)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_vocab_size(n_vocab)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(added["<|im_start|>"])
    w.add_eos_token_id(added["<|im_end|>"])
    w.add_pad_token_id(added["<|im_end|>"])
    w.add_unk_token_id(added["<|endoftext|>"])
    w.add_add_bos_token(False)
    w.add_chat_template(tok.chat_template)

    rng = np.random.default_rng(seed)

    def mat(rows, cols):  # [out, in] like transformers; gguf stores it as is
        return (0.1 * rng.standard_normal((rows, cols))).astype(np.float32)

    embed = mat(n_vocab, HIDDEN)
    q8 = quants.quantize(embed, GGMLQuantizationType.Q8_0)
    w.add_tensor("token_embd.weight", q8, raw_shape=q8.shape, raw_dtype=GGMLQuantizationType.Q8_0)
    w.add_tensor("output_norm.weight", (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))
    for i in range(LAYERS):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))
        w.add_tensor(p + "ffn_norm.weight", (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))
        w.add_tensor(p + "attn_q.weight", mat(HEADS * HEAD_DIM, HIDDEN))
        w.add_tensor(p + "attn_k.weight", mat(KV_HEADS * HEAD_DIM, HIDDEN))
        w.add_tensor(p + "attn_v.weight", mat(KV_HEADS * HEAD_DIM, HIDDEN))
        w.add_tensor(p + "attn_output.weight", mat(HIDDEN, HEADS * HEAD_DIM))
        w.add_tensor(p + "ffn_gate.weight", mat(FFN, HIDDEN))
        w.add_tensor(p + "ffn_up.weight", mat(FFN, HIDDEN))
        w.add_tensor(p + "ffn_down.weight", mat(HIDDEN, FFN))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
