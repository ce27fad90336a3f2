#!/usr/bin/env python3
"""A tiny random-weight EmbeddingGemma (GGUF arch "gemma-embedding") and its float64 numpy oracle.

Writes tests/data/gemmaembed_tiny.gguf: Gemma 3 layers (6, so that the sixth is global: rope
base 1e6 there, 10000 in the five sliding ones), hidden 64, 2 query heads and 1 kv head of 32,
per-head q/k RMS norms, norms before and after attention and FFN, GELU-gated FFN, embeddings
scaled by sqrt(n_embd), a final RMS norm, mean pooling (pooling_type 1), sliding window 16;
matrices F16 (the oracle computes with the same rounded values), norms F32. No tokenizer: the
tests give token ids. And tests/data/gemmaembed_tiny.oracle, in tools/oracle/embed_numpy.py's
format ('case MODEL POOLING N ids' then n_embd floats).

Also tests/data/gemmaembed_dense_tiny.gguf: the same model (the same bytes of every tensor
above) plus the sentence-transformers Dense projections as convert_hf_to_gguf.py
--sentence-transformers-dense-modules writes them: dense_2.weight (64 -> 128) and dense_3.weight
(128 -> 64), F16, no biases (the converter writes only '.weight'), with the four keys
<arch>.dense_{2,3}_feat_{in,out}; and its cases in tests/data/gemmaembed_dense_tiny.oracle.
As llama.cpp's build_dense_out runs them: pooled, then dense_3 @ (dense_2 @ pooled), then
L2-normalized. Their weights come from a generator of their own, so the first file's bytes do
not change.

The forward pass is written here from the architecture (Gemma 3 as llama.cpp's gemma-embedding
graph runs it: non-causal attention, its sliding layers' window symmetric, |p - k| <= W / 2),
float64 throughout, independent of lockstep. Inputs of up to W / 2 + 1 = 9 tokens are within
every query's reach; the 13- and 40-token ones are not (the window cuts keys on one side or
both, and clips at the input's ends).

Usage: tools/oracle/gemma_embedding_tiny.py OUT_DIR
"""
import math
import os
import sys

import gguf
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_tiny import gelu, rope_neox, write_tensors  # noqa: E402 (the same GELU, NEOX rope and file writer)

E, L, H, HKV, D, F, V, CTX, W = 64, 6, 2, 1, 32, 64, 64, 128, 16
EPS = 1e-6
BASE_GLOBAL, BASE_LOCAL = 1e6, 1e4
INPUTS = [[2], [2, 10, 11, 12, 1], [2, 40, 41, 7, 7, 8, 63, 30, 1], [2, 5, 9, 60, 33, 1],
          [2] + [(7 * i + 3) % 60 + 3 for i in range(11)] + [1], [2] + [(11 * i + 5) % 61 + 2 for i in range(38)] + [1]]
DENSE = 128  # dense_2's output width, dense_3's input width


def make_weights(rng):
    r = lambda *s, sc=0.2: rng.standard_normal(s) * sc
    w = {"token_embd.weight": r(V, E, sc=0.3).astype(np.float16), "output_norm.weight": (1 + r(E, sc=0.1)).astype(np.float32)}
    for il in range(L):
        p = f"blk.{il}."
        w[p + "attn_norm.weight"] = 1 + r(E, sc=0.1)
        w[p + "attn_q.weight"] = r(H * D, E, sc=0.25)
        w[p + "attn_k.weight"] = r(HKV * D, E, sc=0.25)
        w[p + "attn_v.weight"] = r(HKV * D, E, sc=0.25)
        w[p + "attn_output.weight"] = r(E, H * D, sc=0.25)
        w[p + "attn_q_norm.weight"] = 1 + r(D, sc=0.1)
        w[p + "attn_k_norm.weight"] = 1 + r(D, sc=0.1)
        w[p + "post_attention_norm.weight"] = 1 + r(E, sc=0.1)
        w[p + "ffn_norm.weight"] = 1 + r(E, sc=0.1)
        w[p + "ffn_gate.weight"] = r(F, E, sc=0.25)
        w[p + "ffn_up.weight"] = r(F, E, sc=0.25)
        w[p + "ffn_down.weight"] = r(E, F, sc=0.25)
        w[p + "post_ffw_norm.weight"] = 1 + r(E, sc=0.1)
    return {k: (v.astype(np.float16) if v.ndim == 2 else v.astype(np.float32)) for k, v in w.items()}


def make_dense(rng):
    """sentence-transformers Dense weights as torch stores them, (out_features, in_features)."""
    return {"dense_2.weight": (rng.standard_normal((DENSE, E)) * 0.15).astype(np.float16),
            "dense_3.weight": (rng.standard_normal((E, DENSE)) * 0.1).astype(np.float16)}


def write_gguf(path, w, dense=False):
    g = gguf.GGUFWriter(path, "gemma-embedding")
    a = "gemma-embedding."
    g.add_uint32(a + "embedding_length", E)
    g.add_uint32(a + "block_count", L)
    g.add_uint32(a + "feed_forward_length", F)
    g.add_uint32(a + "context_length", CTX)
    g.add_uint32(a + "attention.head_count", H)
    g.add_uint32(a + "attention.head_count_kv", HKV)
    g.add_uint32(a + "attention.key_length", D)
    g.add_uint32(a + "attention.value_length", D)
    g.add_float32(a + "attention.layer_norm_rms_epsilon", EPS)
    g.add_uint32(a + "attention.sliding_window", W)
    g.add_float32(a + "rope.freq_base", BASE_GLOBAL)
    g.add_bool(a + "attention.causal", False)
    g.add_uint32(a + "pooling_type", 1)
    if dense:  # gguf_writer.add_dense_features_dims, per module
        g.add_uint32(a + "dense_2_feat_in", E)
        g.add_uint32(a + "dense_2_feat_out", DENSE)
        g.add_uint32(a + "dense_3_feat_in", DENSE)
        g.add_uint32(a + "dense_3_feat_out", E)
    write_tensors(g, w)


def rms(x, wt):
    return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + EPS) * wt


def forward(w, ids):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    x = w["token_embd.weight"][ids] * math.sqrt(E)
    for il in range(L):
        p = f"blk.{il}."
        local = il % 6 < 5
        h = rms(x, w[p + "attn_norm.weight"])
        q = (h @ w[p + "attn_q.weight"].T).reshape(T, H, D)
        k = (h @ w[p + "attn_k.weight"].T).reshape(T, HKV, D)
        v = (h @ w[p + "attn_v.weight"].T).reshape(T, HKV, D)
        q, k = rms(q, w[p + "attn_q_norm.weight"]), rms(k, w[p + "attn_k_norm.weight"])
        base = BASE_LOCAL if local else BASE_GLOBAL
        q, k = rope_neox(q, pos, base), rope_neox(k, pos, base)
        k, v = np.repeat(k, H // HKV, 1), np.repeat(v, H // HKV, 1)
        s = np.einsum("thd,uhd->htu", q, k) / math.sqrt(D)
        if local:  # the symmetric window: |p - k| <= W / 2
            far = np.abs(pos[:, None] - pos[None, :]) > W // 2
            s = np.where(far[None], -np.inf, s)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("htu,uhd->thd", s, v).reshape(T, H * D) @ w[p + "attn_output.weight"].T
        x = x + rms(o, w[p + "post_attention_norm.weight"])
        h = rms(x, w[p + "ffn_norm.weight"])
        f = (gelu(h @ w[p + "ffn_gate.weight"].T) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        x = x + rms(f, w[p + "post_ffw_norm.weight"])
    return rms(x, w["output_norm.weight"])


def write_oracle(path, name, w, dense, header):
    lines = [header]
    for ids in INPUTS:
        h = forward(w, np.array(ids))
        for pool, vec in (("mean", h.mean(0)), ("cls", h[0]), ("last", h[-1])):
            if dense:  # after pooling, before normalizing; no bias
                vec = dense["dense_3.weight"].astype(np.float64) @ (dense["dense_2.weight"].astype(np.float64) @ vec)
            vec = vec / np.linalg.norm(vec)
            lines.append(f"case {name} {pool} {len(ids)} " + " ".join(map(str, ids)))
            lines.append(" ".join(f"{x:.9e}" for x in vec))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    out = sys.argv[1]
    w = make_weights(np.random.default_rng(34))
    write_gguf(os.path.join(out, "gemmaembed_tiny.gguf"), w)
    write_oracle(os.path.join(out, "gemmaembed_tiny.oracle"), "gemmaembed_tiny.gguf", w, None,
                 "# tools/oracle/gemma_embedding_tiny.py: float64 EmbeddingGemma embeddings (final RMS norm, pooled, L2-normalized)")
    dense = make_dense(np.random.default_rng(35))
    write_gguf(os.path.join(out, "gemmaembed_dense_tiny.gguf"), {**w, **dense}, dense=True)
    write_oracle(os.path.join(out, "gemmaembed_dense_tiny.oracle"), "gemmaembed_dense_tiny.gguf", w, dense,
                 "# tools/oracle/gemma_embedding_tiny.py: float64 EmbeddingGemma embeddings with the dense projections "
                 "(final RMS norm, pooled, dense_3 @ dense_2 @ pooled, L2-normalized)")


if __name__ == "__main__":
    main()
