#!/usr/bin/env python3
"""Float64 numpy oracle of sequence embeddings on the tiny llama and qwen3 models
(tests/data/{llama,qwen3}_tiny.gguf, every tensor F32): the forward pass written from the
architectures' definitions over the GGUF's own tensors, the final RMS norm's output (the rows
the output matrix would multiply), pooled (mean, cls = first token, last = last token) and
L2-normalized, as llama.cpp's embeddings and llama-server's /v1/embeddings define them.

Independent of lockstep's graph: no shared code, float64 throughout, attention as a plain
masked softmax. It checks itself first: its hidden states times the output matrix must give the
logits transformers wrote for the same files (tests/data/*_tiny.golden) within 1e-4. tests/runtime/test_embed.cpp compares lockstep's vectors with these (cosine).

The GGUF layout it reads: matrices ne [in, out] (numpy [out, in]: y = x @ W.T); llama's attn_q /
attn_k rows already permuted by the converter to interleaved rope pairs (2i, 2i+1), with Llama 3's
per-pair divisors in rope_freqs.weight; qwen3's rope on halves (i, i + d/2) and per-head RMS norms
of q and k (attn_q_norm / attn_k_norm) before rope; tied output (qwen3) changes nothing here.

Usage: tools/oracle/embed_numpy.py SOURCE_DIR OUT_FILE
Output (text): comment lines '#'; then per case one line
  'case MODEL POOLING N_TOKENS tok0 tok1 ...' and one line of n_embd floats (%.9e).
"""
import sys

import gguf
import numpy as np


def field(r, key, default=None):
    f = r.fields.get(key)
    if f is None:
        return default
    return f.contents()


class Model:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        self.arch = field(r, "general.architecture")
        a = self.arch + "."
        self.E = int(field(r, a + "embedding_length"))
        self.L = int(field(r, a + "block_count"))
        self.H = int(field(r, a + "attention.head_count"))
        self.Hkv = int(field(r, a + "attention.head_count_kv", self.H))
        self.D = int(field(r, a + "attention.key_length", self.E // self.H))
        self.n_rot = int(field(r, a + "rope.dimension_count", self.D))
        self.base = float(field(r, a + "rope.freq_base", 10000.0))
        self.eps = float(field(r, a + "attention.layer_norm_rms_epsilon", 1e-5))
        self.t = {}
        for t in r.tensors:
            assert t.tensor_type == gguf.GGMLQuantizationType.F32, (t.name, t.tensor_type)
            self.t[t.name] = np.array(t.data, dtype=np.float64).reshape([int(x) for x in reversed(t.shape)])
        self.neox = self.arch != "llama"
        self.qk_norm = "blk.0.attn_q_norm.weight" in self.t

    def rms(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def rope(self, x, pos):  # x (T, heads, D)
        half = self.n_rot // 2
        inv = self.base ** (-np.arange(half, dtype=np.float64) * 2.0 / self.n_rot)
        if "rope_freqs.weight" in self.t:
            inv = inv / self.t["rope_freqs.weight"]
        ang = pos[:, None].astype(np.float64) * inv[None, :]  # (T, half)
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        y = x.copy()
        if self.neox:
            a, b = x[..., :half], x[..., half:2 * half]
            y[..., :half] = a * c - b * s
            y[..., half:2 * half] = a * s + b * c
        else:
            a, b = x[..., 0:2 * half:2], x[..., 1:2 * half:2]
            y[..., 0:2 * half:2] = a * c - b * s
            y[..., 1:2 * half:2] = a * s + b * c
        return y

    def hidden(self, tokens):
        T = len(tokens)
        pos = np.arange(T)
        x = self.t["token_embd.weight"][np.array(tokens)]
        mask = np.tril(np.ones((T, T), dtype=bool))
        g = self.H // self.Hkv
        for il in range(self.L):
            p = "blk.%d." % il
            w = lambda n: self.t[p + n]
            h = self.rms(x, w("attn_norm.weight"))
            q = (h @ w("attn_q.weight").T).reshape(T, self.H, self.D)
            k = (h @ w("attn_k.weight").T).reshape(T, self.Hkv, self.D)
            v = (h @ w("attn_v.weight").T).reshape(T, self.Hkv, -1)
            if self.qk_norm:
                q = self.rms(q, w("attn_q_norm.weight"))
                k = self.rms(k, w("attn_k_norm.weight"))
            q, k = self.rope(q, pos), self.rope(k, pos)
            out = np.zeros((T, self.H, v.shape[2]))
            for hh in range(self.H):
                kv = hh // g
                sc = (q[:, hh, :] @ k[:, kv, :].T) / np.sqrt(self.D)
                sc = np.where(mask, sc, -np.inf)
                sc = np.exp(sc - sc.max(axis=1, keepdims=True))
                sc /= sc.sum(axis=1, keepdims=True)
                out[:, hh, :] = sc @ v[:, kv, :]
            x = x + out.reshape(T, -1) @ w("attn_output.weight").T
            h = self.rms(x, w("ffn_norm.weight"))
            gt = h @ w("ffn_gate.weight").T
            x = x + ((gt / (1 + np.exp(-gt))) * (h @ w("ffn_up.weight").T)) @ w("ffn_down.weight").T
        return self.rms(x, self.t["output_norm.weight"])


def check_against_transformers(m, golden_path):
    """The oracle's own check: its hidden states times the output matrix give the golden logits
    that transformers wrote for these files (families_tiny.py), over a 100-token prompt.
    Measured: qwen3 1.5e-5, llama 2.4e-6 (|logit| <= 18; float32 in transformers)."""
    d = open(golden_path, "rb").read()
    n, V = np.frombuffer(d, "<i4", 2)
    toks = np.frombuffer(d, "<i4", n, 8)
    want = np.frombuffer(d, "<f4", n * V, 8 + 4 * n).reshape(n, V)
    W = m.t.get("output.weight", m.t["token_embd.weight"])
    worst = np.abs(m.hidden([int(t) for t in toks]) @ W.T - want).max()
    assert worst < 1e-4, (golden_path, worst)
    print("%s: logits within %.2g of transformers'" % (golden_path, worst))


def pool(hs, pooling):
    v = {"mean": hs.mean(axis=0), "cls": hs[0], "last": hs[-1]}[pooling]
    return v / np.linalg.norm(v)


def main():
    src, out = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(20261127)
    lines = ["# tools/oracle/embed_numpy.py: float64 embeddings (final RMS norm, pooled, L2-normalized)"]
    for name, poolings in (("qwen3_tiny.gguf", ("last", "mean")), ("llama_tiny.gguf", ("mean", "cls", "last"))):
        m = Model(src + "/tests/data/" + name)
        check_against_transformers(m, src + "/tests/data/" + name.replace(".gguf", ".golden"))
        n_vocab = m.t["token_embd.weight"].shape[0]
        for n in (1, 7, 40, 133):
            toks = [int(t) for t in rng.integers(0, n_vocab, n)]
            hs = m.hidden(toks)
            for pl in poolings:
                v = pool(hs, pl)
                lines.append("case %s %s %d %s" % (name, pl, n, " ".join(map(str, toks))))
                lines.append(" ".join("%.9e" % x for x in v))
    open(out, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
