#!/usr/bin/env python3
"""Tiny random-weight BERT-style encoders and their float64 numpy oracle.

Writes tests/data/bert_tiny.gguf (arch "bert": learned positions, separate q/k/v with biases,
GELU FFN) and tests/data/nomicbert_tiny.gguf (arch "nomic-bert": fused attn_qkv, rotary
positions on halves (NEOX), SwiGLU FFN, no biases), both with a WordPiece vocabulary
(tokenizer.ggml.model "bert"), hidden 64, 2 layers, 4 heads, and tests/data/bert_tiny.oracle.

The vocabulary is written as llama.cpp's converter writes BERT's: "##piece" continuations as
"piece", word-initial pieces as "▁piece", [CLS]/[SEP]/... as they are (control tokens).

The oracle is independent of lockstep: BERT's tokenizer written here from its definition
(basic tokenization: whitespace split, lower case, accents stripped after NFD, punctuation and
CJK split off; then greedy longest-match WordPiece with "##" continuations, [UNK] for a word
with an unmatched part, [CLS] ... [SEP] around), over the ORIGINAL "##" vocabulary; and the
forward pass in float64 from the architectures' definitions, non-causal softmax attention,
LayerNorm (biased variance), GELU in its tanh form (llama.cpp's ggml_gelu, which lockstep
follows; the erf form differs by < 1e-3 per activation), mean / CLS pooling, L2 normalization.

And a reranker, tests/data/bert_rerank_tiny.{gguf,oracle} (write_reranker).

Usage: tools/oracle/bert_tiny.py OUT_DIR   (writes the five files there)
Oracle format (text): '#' comments; 'tok MODEL N id...' after a line 'text <json string>';
'case MODEL POOLING N id...' followed by one line of n_embd floats (%.9e).
"""
import json
import math
import os
import sys
import unicodedata

import gguf
import numpy as np

E, L, H, F, CTX = 64, 2, 4, 128, 96
D = E // H
EPS = 1e-12

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "quick", "brown", "fox", "jump", "over", "lazy", "dog", "hello", "world", "un", "cafe", "naive",
         "em", "is", "it", "of", "to", "in", "and", "token", "search", "query", "document", "中", "文",
         "embed", "nomic", "bert", "1", "2", "3", "42"]
CONT = ["s", "ed", "ing", "believ", "able", "bed", "ding", "iz", "er", "ly", "e", "t", "n", "a", "o", "r", "d"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
LETTERS = list("abcdefghijklmnopqrstuvwxyz")
VOCAB = SPECIALS + WORDS + PUNCT + LETTERS + ["##" + c for c in CONT] + ["##" + c for c in LETTERS if c not in CONT]
assert len(set(VOCAB)) == len(VOCAB)

TEXTS = [
    "Hello world!",
    "The quick brown fox jumped over the lazy dog.",
    "Unbelievable: the dogs are jumping, it's 42!",
    "Café   naïve\tEMBEDDINGS\n(search_query) 中文",
    "xyzzy qwerty unbelievably",
    "",
]


# ---- BERT's tokenizer, from its definition (over the "##" vocabulary)
def is_punct(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokenize(text):
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
            continue
        out.append(" " if ch.isspace() else (f" {ch} " if is_cjk(cp) else ch))
    words = []
    for w in "".join(out).split():
        w = unicodedata.normalize("NFD", w.lower())
        w = "".join(c for c in w if unicodedata.category(c) != "Mn")
        cur = ""
        for c in w:
            if is_punct(c):
                if cur:
                    words.append(cur)
                words.append(c)
                cur = ""
            else:
                cur += c
        if cur:
            words.append(cur)
    return words


def wordpiece(words, vocab):
    ids = []
    for w in words:
        pieces, start = [], 0
        while start < len(w):
            end, hit = len(w), None
            while start < end:
                s = w[start:end] if start == 0 else "##" + w[start:end]
                if s in vocab:
                    hit = s
                    break
                end -= 1
            if hit is None:
                pieces = None
                break
            pieces.append(vocab[hit])
            start = end
        ids.extend([vocab["[UNK]"]] if pieces is None else pieces)
    return ids


def bert_tokenize(text):
    vocab = {t: i for i, t in enumerate(VOCAB)}
    return [vocab["[CLS]"]] + wordpiece(basic_tokenize(text), vocab) + [vocab["[SEP]"]]


def gguf_token(t):
    if t in SPECIALS:
        return t
    return t[2:] if t.startswith("##") else "\u2581" + t


# ---- weights
def make_weights(arch, rng):
    V = len(VOCAB)
    r = lambda *s, sc=0.2: rng.standard_normal(s) * sc
    w = {"token_embd.weight": r(V, E, sc=0.5), "token_types.weight": r(2, E),
         "token_embd_norm.weight": 1 + r(E, sc=0.1), "token_embd_norm.bias": r(E, sc=0.1)}
    if arch == "bert":
        w["position_embd.weight"] = r(CTX, E)
    for il in range(L):
        p = f"blk.{il}."
        if arch == "bert":
            for n in ("q", "k", "v"):
                w[p + f"attn_{n}.weight"] = r(E, E, sc=0.25)
                w[p + f"attn_{n}.bias"] = r(E, sc=0.1)
            w[p + "attn_output.bias"] = r(E, sc=0.1)
            w[p + "ffn_up.bias"] = r(F, sc=0.1)
            w[p + "ffn_down.bias"] = r(E, sc=0.1)
        else:
            w[p + "attn_qkv.weight"] = r(3 * E, E, sc=0.25)
            w[p + "ffn_gate.weight"] = r(F, E, sc=0.25)
        w[p + "attn_output.weight"] = r(E, E, sc=0.25)
        w[p + "attn_output_norm.weight"] = 1 + r(E, sc=0.1)
        w[p + "attn_output_norm.bias"] = r(E, sc=0.1)
        w[p + "ffn_up.weight"] = r(F, E, sc=0.25)
        w[p + "ffn_down.weight"] = r(E, F, sc=0.2)
        w[p + "layer_output_norm.weight"] = 1 + r(E, sc=0.1)
        w[p + "layer_output_norm.bias"] = r(E, sc=0.1)
    return {k: v.astype(np.float32) for k, v in w.items()}


def write_gguf(path, arch, w, pooling):
    g = gguf.GGUFWriter(path, arch)
    a = arch + "."
    g.add_uint32(a + "embedding_length", E)
    g.add_uint32(a + "block_count", L)
    g.add_uint32(a + "feed_forward_length", F)
    g.add_uint32(a + "context_length", CTX)
    g.add_uint32(a + "attention.head_count", H)
    g.add_float32(a + "attention.layer_norm_epsilon", EPS)
    g.add_bool(a + "attention.causal", False)
    g.add_uint32(a + "pooling_type", pooling)
    if arch == "nomic-bert":
        g.add_float32(a + "rope.freq_base", 1000.0)
    g.add_string("tokenizer.ggml.model", "bert")
    g.add_array("tokenizer.ggml.tokens", [gguf_token(t) for t in VOCAB])
    g.add_array("tokenizer.ggml.token_type", [3 if t in SPECIALS else 1 for t in VOCAB])
    g.add_uint32("tokenizer.ggml.unknown_token_id", VOCAB.index("[UNK]"))
    g.add_uint32("tokenizer.ggml.cls_token_id", VOCAB.index("[CLS]"))
    g.add_uint32("tokenizer.ggml.seperator_token_id", VOCAB.index("[SEP]"))
    g.add_uint32("tokenizer.ggml.padding_token_id", VOCAB.index("[PAD]"))
    g.add_uint32("tokenizer.ggml.mask_token_id", VOCAB.index("[MASK]"))
    write_tensors(g, w)


def write_tensors(g, w):
    """Adds the tensors of w (name -> array) to writer g and writes the file."""
    for k, v in w.items():
        g.add_tensor(k, v)
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()


# ---- float64 forward pass
def layer_norm(x, wt, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + EPS) * wt + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def rope_neox(x, pos, base):  # x (T, heads, d): pairs (i, i + d/2)
    d = x.shape[-1]
    half = d // 2
    inv = base ** (-np.arange(half) * 2.0 / d)
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * c - b * s, a * s + b * c], -1)


def forward(arch, w, ids):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    x = w["token_embd.weight"][ids] + w["token_types.weight"][0]
    if arch == "bert":
        x = x + w["position_embd.weight"][:T]
    x = layer_norm(x, w["token_embd_norm.weight"], w["token_embd_norm.bias"])
    for il in range(L):
        p = f"blk.{il}."
        if arch == "bert":
            q, k, v = (x @ w[p + f"attn_{n}.weight"].T + w[p + f"attn_{n}.bias"] for n in "qkv")
        else:
            qkv = x @ w[p + "attn_qkv.weight"].T
            q, k, v = qkv[:, :E], qkv[:, E:2 * E], qkv[:, 2 * E:]
        q, k, v = (t.reshape(T, H, D) for t in (q, k, v))
        if arch == "nomic-bert":
            q, k = rope_neox(q, pos, 1000.0), rope_neox(k, pos, 1000.0)
        s = np.einsum("thd,uhd->htu", q, k) / math.sqrt(D)  # every key: no causal mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("htu,uhd->thd", s, v).reshape(T, E) @ w[p + "attn_output.weight"].T
        if arch == "bert":
            o = o + w[p + "attn_output.bias"]
        x = layer_norm(o + x, w[p + "attn_output_norm.weight"], w[p + "attn_output_norm.bias"])
        if arch == "bert":
            f = gelu(x @ w[p + "ffn_up.weight"].T + w[p + "ffn_up.bias"]) @ w[p + "ffn_down.weight"].T + w[p + "ffn_down.bias"]
        else:
            g = x @ w[p + "ffn_gate.weight"].T
            f = (g / (1 + np.exp(-g)) * (x @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        x = layer_norm(f + x, w[p + "layer_output_norm.weight"], w[p + "layer_output_norm.bias"])
    return x


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(33)
    lines = ["# tools/oracle/bert_tiny.py: WordPiece ids (BERT's definition) and float64 pooled, L2-normalized embeddings"]
    for text in TEXTS:
        ids = bert_tokenize(text)
        lines.append("text " + json.dumps(text, ensure_ascii=False))
        lines.append(f"tok {len(ids)} " + " ".join(map(str, ids)))
    # A long input: 70 tokens (more than a ubatch of 32: a non-causal model refuses it there).
    long_ids = bert_tokenize(" ".join(["the quick brown fox jumped over the lazy dog ."] * 7))[:70]
    for arch, fname, pooling in (("bert", "bert_tiny.gguf", 1), ("nomic-bert", "nomicbert_tiny.gguf", 1)):
        w = make_weights(arch, rng)
        write_gguf(os.path.join(out, fname), arch, w, pooling)
        for ids in [bert_tokenize(t) for t in TEXTS[:4]] + [long_ids]:
            h = forward(arch, w, np.array(ids))
            for pool, vec in (("mean", h.mean(0)), ("cls", h[0])):
                vec = vec / np.linalg.norm(vec)
                lines.append(f"case {fname} {pool} {len(ids)} " + " ".join(map(str, ids)))
                lines.append(" ".join(f"{x:.9e}" for x in vec))
    with open(os.path.join(out, "bert_tiny.oracle"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    write_reranker(out)


# ---- a reranker: BERT with a RoBERTa-style classifier head, pooling_type 4 (rank)
RERANK_QUERY = "the quick fox"
RERANK_DOCS = ["The quick brown fox jumped over the lazy dog.", "Hello world!", "it is 42", "search query document",
               "the lazy dog is in the world"]


def write_reranker(out):
    """tests/data/bert_rerank_tiny.gguf: the bert layout above (its own weights) plus cls.weight
    (64 -> 64) and cls.bias, then tanh, then cls.output.weight (64 -> 1) and cls.output.bias, as
    llama.cpp's build_pooling runs LLAMA_POOLING_TYPE_RANK on the [CLS] state; and
    tests/data/bert_rerank_tiny.oracle: per document, its pair's ids as llama-server's
    format_prompt_rerank builds them for a WordPiece vocabulary (add_bos, no EOS, add_sep:
    [CLS] query [SEP] document) and the float64 score."""
    rng = np.random.default_rng(35)
    w = make_weights("bert", rng)
    w["cls.weight"] = (rng.standard_normal((E, E)) * 0.25).astype(np.float32)
    w["cls.bias"] = (rng.standard_normal(E) * 0.1).astype(np.float32)
    w["cls.output.weight"] = (rng.standard_normal((1, E)) * 0.5).astype(np.float32)
    w["cls.output.bias"] = np.array([0.25], dtype=np.float32)
    write_gguf(os.path.join(out, "bert_rerank_tiny.gguf"), "bert", w, 4)
    vocab = {t: i for i, t in enumerate(VOCAB)}
    wd = {k: v.astype(np.float64) for k, v in w.items()}
    lines = ["# tools/oracle/bert_tiny.py: a reranker's pairs ([CLS] query [SEP] document) and float64 scores",
             "query " + json.dumps(RERANK_QUERY)]
    for doc in RERANK_DOCS:
        ids = [vocab["[CLS]"]] + wordpiece(basic_tokenize(RERANK_QUERY), vocab) + [vocab["[SEP]"]] + wordpiece(basic_tokenize(doc), vocab)
        h = forward("bert", w, np.array(ids))[0]
        score = wd["cls.output.weight"] @ np.tanh(wd["cls.weight"] @ h + wd["cls.bias"]) + wd["cls.output.bias"]
        lines.append("document " + json.dumps(doc))
        lines.append(f"tok {len(ids)} " + " ".join(map(str, ids)))
        lines.append(f"score {score[0]:.9e}")
    with open(os.path.join(out, "bert_rerank_tiny.oracle"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
