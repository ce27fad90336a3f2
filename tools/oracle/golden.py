"""The golden file of a tiny oracle model (read by tests/support/golden.h): int32 n, int32 n_vocab,
n int32 tokens, n x n_vocab float32 logits of the whole prompt evaluated at once. Also prints
how far transformers' own token-at-a-time path (through its cache) is from those logits, and
the smallest top-1 margin: the scale of the tolerance a C++ test can hope for."""
import struct

import numpy as np
import torch


def write_golden(m, vocab_size, n_prompt, seed, path):
    tokens = np.random.default_rng(seed).integers(0, vocab_size, n_prompt).astype(np.int32)
    with torch.no_grad():
        logits = m(torch.tensor(tokens[None].astype(np.int64))).logits[0].float().numpy()
        out = m(torch.tensor(tokens[None, :1].astype(np.int64)), use_cache=True)
        cache = out.past_key_values
        step = [out.logits[0, -1]]
        for t in range(1, n_prompt):
            out = m(torch.tensor(tokens[None, t:t + 1].astype(np.int64)), past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            step.append(out.logits[0, -1])
        step = torch.stack(step).float().numpy()
    print("max |whole - token at a time| logits:", np.abs(step - logits).max(), " max |logit|:", np.abs(logits).max())
    top2 = np.sort(logits, axis=1)[:, -2:]
    print("smallest top-1 margin:", (top2[:, 1] - top2[:, 0]).min())
    with open(path, "wb") as f:
        f.write(struct.pack("<ii", n_prompt, vocab_size))
        f.write(tokens.astype("<i4").tobytes())
        f.write(logits.astype("<f4").tobytes())


def write_spm_vocab_keys(w, toks, scores, types):
    """A Gemma-style SentencePiece vocabulary's tokenizer.* keys (ids 0..3: pad, eos, bos, unk;
    BOS added, no space prefix), as the tiny oracles write it (families_tiny.py, vision_tiny.py)."""
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_string("tokenizer.ggml.pre", "default")
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.scores", scores)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_uint32("tokenizer.ggml.bos_token_id", 2)
    w.add_uint32("tokenizer.ggml.eos_token_id", 1)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 3)
    w.add_uint32("tokenizer.ggml.padding_token_id", 0)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_space_prefix", False)
