#!/usr/bin/env python3
"""Independent numpy reference ("oracle") for Gemma 3 text models stored as GGUF.

Written from the model's published semantics (Gemma 3 / HF config / GGUF
metadata), not from lockstep's C++ code. Weights are dequantized with the
`gguf` PyPI package; everything else is plain numpy, computed in float32
(or float64 with --dtype float64).

Forward pass, per token position p (0-based, BOS at p = 0):
  h    = token_embd[tok] * sqrt(n_embd)
  for layer l in 0..n_layer-1:
      local = (l % 6) < 5                     # 5 sliding-window layers, then 1 global
      base  = 10000 if local else rope.freq_base (1e6)
      x  = rmsnorm(h, attn_norm)              # rmsnorm(x,w) = x / sqrt(mean(x^2)+eps) * w
      q  = x @ attn_q^T  -> [n_head, head_dim];   q = rmsnorm(q, attn_q_norm) per head
      k  = x @ attn_k^T  -> [n_head_kv, head_dim]; k = rmsnorm(k, attn_k_norm) per head
      v  = x @ attn_v^T  -> [n_head_kv, head_dim]
      q, k = rope_neox(q, p, base), rope_neox(k, p, base)   # rotate halves (i, i+d/2)
      s[j] = (q . k_j) / sqrt(head_dim), for keys j <= p  (and p - j < sliding_window if local)
      o  = softmax(s) @ v   (GQA: query head hq uses kv head hq // (n_head/n_head_kv))
      h  = h + rmsnorm(o @ attn_output^T, post_attention_norm)
      x  = rmsnorm(h, ffn_norm)
      h  = h + rmsnorm((gelu_tanh(x @ ffn_gate^T) * (x @ ffn_up^T)) @ ffn_down^T, post_ffw_norm)
  logits = rmsnorm(h, output_norm) @ token_embd^T          # tied output, no softcap
GGUF norm weights already contain Gemma's "+1", so they are used as-is.

Golden file format (all little-endian; see also tests/data/gemma3_oracle.md):
  char[8]  magic       = b"LSGOLD01"
  u32      version     = 1
  u32      n_tokens    (T)
  u32      top_k       (K = 32)
  u32      n_vocab
  u32      tokens[T]   (tokens[0] = BOS = 2)
  then T records, record p describes the logits row after feeding tokens[0..p]
  (i.e. the distribution of the token at position p+1):
     u32  argmax        id of the largest logit (ties -> smallest id)
     f32  logsumexp     log(sum(exp(logits)))  over the full vocabulary
     f32  next_logit    logits[tokens[p+1]]; NaN for the last record
     u32  top_ids[K]    ids of the K largest logits, descending (ties -> smaller id)
     f32  top_logits[K] their logits
  then the greedy-decoding section:
     u32  n_prefix      number of leading tokens[] used as prompt (32)
     u32  n_greedy      number of greedily generated tokens (20)
     u32  greedy[n_greedy]
log p(tokens[p+1] | tokens[..p]) = next_logit - logsumexp.

Usage:
  OMP_NUM_THREADS=2 python3 tools/oracle/gemma3_numpy.py \
      --model ~/.cache/lockstep/gemma-3-270m-q4_k_m.gguf \
      --prompt-file /usr/share/common-licenses/GPL-3 --n-tokens 600 \
      --out tests/data/gemma3_oracle.bin [--check64] [--md tests/data/gemma3_oracle.md]
"""
import os

# Keep BLAS polite on shared machines (must be set before numpy is imported).
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # 1 is much faster than 2 on a busy box

import argparse
import math
import struct
import sys
import time

import numpy as np
import gguf

MAGIC = b"LSGOLD01"
VERSION = 1
TOP_K = 32


# ----------------------------------------------------------------------------
# GGUF loading
# ----------------------------------------------------------------------------

def field_value(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


# ----------------------------------------------------------------------------
# --act-quant: the activation quantization of an integer matmul hot path
# ----------------------------------------------------------------------------
# An engine like lockstep (or llama.cpp's CPU backend) computes x @ W^T for a quantized W by
# first quantizing each activation row x to W's "dot type", then doing integer block dot
# products. Mathematically (up to float summation order) that equals
#     dequant(quant_dot_type(x)) @ dequant(W)^T
# which is what this emulates. Dot types (GGUF / ggml convention):
#   Q4_0, Q5_0, Q8_0          -> Q8_0 (blocks of 32)
#   Q4_1, Q5_1                -> Q8_1 (blocks of 32; same quants/scale as Q8_0, see below)
#   Q2_K, Q3_K, Q4_K, Q5_K, Q6_K -> Q8_K (blocks of 256)
#   F16                       -> F16 (round to nearest even)
#   F32, BF16                 -> F32 (unchanged)
# The quantizers, as specified for the reference (all arithmetic in the working dtype,
# i.e. float32 for the golden file; rint = round half to even):
#   Q8_0: amax = max|x_b|; d = amax / 127; id = 127 / amax (0 if amax == 0);
#         q = rint(x * id) (|q| <= 127); d is stored as fp16 (RNE), so x^ = f16(d) * q.
#   Q8_K: amax = max|x_b|; iscale = 127 / amax; d = 1 / iscale stored as float32;
#         q = rint(x * iscale); x^ = d * q (an all-zero block stays zero).
# Q8_1 additionally stores s = f16(d * sum(q)) for the weight's min term; the exact engine
# value of that term (m_w * s) differs from what x^ gives (m_w * f16(d) * sum(q)) by fp16
# rounding only. No Q4_1/Q5_1 tensor is in the models this oracle is used for.
Q8_0_DOT = {"Q4_0", "Q5_0", "Q8_0", "Q4_1", "Q5_1"}
Q8_K_DOT = {"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"}


def _q8_blocks(x, bs, fp16_scale):
    """Quantize-dequantize the last axis of x in blocks of bs (Q8_0 style if fp16_scale, else Q8_K)."""
    dt = x.dtype.type
    shp = x.shape
    assert shp[-1] % bs == 0, f"row length {shp[-1]} not a multiple of {bs}"
    xb = x.reshape(shp[:-1] + (shp[-1] // bs, bs))
    amax = np.abs(xb).max(axis=-1, keepdims=True)
    nz = amax != 0
    safe = np.where(nz, amax, dt(1))
    if fp16_scale:                      # Q8_0 / Q8_1
        d = amax / dt(127)
        inv = np.where(nz, dt(127) / safe, dt(0))
        d = d.astype(np.float16).astype(dt)   # stored as fp16, round to nearest even
    else:                               # Q8_K
        inv = np.where(nz, dt(127) / safe, dt(0))
        d = np.where(nz, dt(1) / np.where(nz, inv, dt(1)), dt(0))
    q = np.rint(xb * inv)               # ties to even; |q| <= 127 by construction
    assert np.abs(q).max(initial=0) <= 127
    return (d * q).reshape(shp)


def act_quant(x, wtype):
    """The activation rows x as the engine's dot product sees them for weight type wtype."""
    if wtype in Q8_0_DOT:
        return _q8_blocks(x, 32, True)
    if wtype in Q8_K_DOT:
        return _q8_blocks(x, 256, False)
    if wtype == "F16":
        return x.astype(np.float16).astype(x.dtype)
    if wtype in ("F32", "BF16"):
        return x
    raise NotImplementedError(f"--act-quant: no dot type known for weight type {wtype}")


class Gemma3:
    def __init__(self, path, dtype=np.float32, act_quant=False):
        self.dtype = dtype
        self.act_quant = act_quant
        self.wtype = {}  # weight name -> GGUF type name, for --act-quant
        r = gguf.GGUFReader(path)
        self.reader = r
        arch = field_value(r, "general.architecture")
        assert arch == "gemma3", f"not a gemma3 model: {arch}"
        g = lambda k, d=None: field_value(r, f"gemma3.{k}", d)
        self.n_embd = int(g("embedding_length"))
        self.n_layer = int(g("block_count"))
        self.n_head = int(g("attention.head_count"))
        self.n_head_kv = int(g("attention.head_count_kv"))
        self.head_dim = int(g("attention.key_length", self.n_embd // self.n_head))
        self.n_ff = int(g("feed_forward_length"))
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.rope_base_global = float(g("rope.freq_base", 1e6))
        self.rope_base_local = 10000.0
        self.sliding_window = int(g("attention.sliding_window"))
        self.swa_pattern = 6
        # Gemma 3 uses query_pre_attn_scalar = head_dim for all sizes except 27B.
        self.attn_scale = 1.0 / math.sqrt(self.head_dim)
        # Rope scaling (only the plain linear "factor" kind is handled; absent here).
        scale_type = g("rope.scaling.type")
        scale_factor = g("rope.scaling.factor")
        self.rope_linear_factor = 1.0
        if scale_type not in (None, "none") and scale_factor:
            assert scale_type == "linear", f"unsupported rope scaling {scale_type}"
            self.rope_linear_factor = float(scale_factor)  # applies to global layers only
        softcap = g("final_logit_softcapping")
        assert not softcap, "final logit softcapping not expected for gemma3"

        tensors = {t.name: t for t in r.tensors}
        assert "output.weight" not in tensors, "expected tied output embedding"

        def deq(name):
            t = tensors[name]
            self.wtype[name] = t.tensor_type.name
            a = gguf.quants.dequantize(t.data, t.tensor_type)
            # dequantize() returns rows x cols == [out_features, in_features] for matrices
            return np.ascontiguousarray(a, dtype=dtype)

        self.tok_embd = deq("token_embd.weight")           # [n_vocab, n_embd]
        self.n_vocab = self.tok_embd.shape[0]
        self.output_norm = deq("output_norm.weight")
        self.layers = []
        for il in range(self.n_layer):
            p = f"blk.{il}."
            L = {k: deq(p + k + ".weight") for k in (
                "attn_norm", "attn_q", "attn_k", "attn_v", "attn_q_norm", "attn_k_norm",
                "attn_output", "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up",
                "ffn_down", "post_ffw_norm")}
            L["types"] = {k: self.wtype[p + k + ".weight"] for k in (
                "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}
            assert L["attn_q"].shape == (self.n_head * self.head_dim, self.n_embd)
            assert L["attn_k"].shape == (self.n_head_kv * self.head_dim, self.n_embd)
            assert L["ffn_gate"].shape == (self.n_ff, self.n_embd)
            self.layers.append(L)

    def mm(self, x, w, wtype):
        """x @ w^T; with --act-quant the rows of x first go through act_quant(wtype)."""
        if self.act_quant:
            x = act_quant(x, wtype)
        return x @ w.T

    def is_local(self, il):
        return (il % self.swa_pattern) < (self.swa_pattern - 1)

    # ------------------------------------------------------------------------
    # building blocks
    # ------------------------------------------------------------------------
    def rmsnorm(self, x, w):
        ms = np.mean(x * x, axis=-1, keepdims=True)
        return x / np.sqrt(ms + self.dtype(self.eps)) * w

    def rope(self, x, pos, base, linear_factor=1.0):
        """NEOX-style rope on x[T, H, D]: pairs (i, i + D/2), angle pos * base^(-2i/D)."""
        d = x.shape[-1]
        half = d // 2
        inv_freq = base ** (-np.arange(half, dtype=np.float64) * 2.0 / d)
        ang = (pos.astype(np.float64) / linear_factor)[:, None] * inv_freq[None, :]  # [T, half]
        cos = np.cos(ang).astype(self.dtype)[:, None, :]
        sin = np.sin(ang).astype(self.dtype)[:, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    @staticmethod
    def gelu_tanh(x):
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x * x * x)))

    def attention(self, L, x, pos, il):
        T = x.shape[0]
        H, Hkv, D = self.n_head, self.n_head_kv, self.head_dim
        ty = L["types"]
        q = self.mm(x, L["attn_q"], ty["attn_q"]).reshape(T, H, D)
        k = self.mm(x, L["attn_k"], ty["attn_k"]).reshape(T, Hkv, D)
        v = self.mm(x, L["attn_v"], ty["attn_v"]).reshape(T, Hkv, D)
        q = self.rmsnorm(q, L["attn_q_norm"])
        k = self.rmsnorm(k, L["attn_k_norm"])
        local = self.is_local(il)
        base = self.rope_base_local if local else self.rope_base_global
        lf = 1.0 if local else self.rope_linear_factor
        q = self.rope(q, pos, base, lf)
        k = self.rope(k, pos, base, lf)

        # mask[i, j]: query i may see key j
        dp = pos[:, None] - pos[None, :]
        visible = dp >= 0
        if local:
            visible &= dp < self.sliding_window
        group = H // Hkv
        out = np.empty((T, H, D), dtype=self.dtype)
        for h in range(H):
            kh = k[:, h // group, :]
            vh = v[:, h // group, :]
            s = (q[:, h, :] @ kh.T) * self.dtype(self.attn_scale)  # [T, T]
            s = np.where(visible, s, -np.inf)
            s = s - s.max(axis=-1, keepdims=True)
            e = np.exp(s)
            pr = e / e.sum(axis=-1, keepdims=True)
            out[:, h, :] = pr @ vh
        return self.mm(out.reshape(T, H * D), L["attn_output"], ty["attn_output"])

    def hidden(self, tokens):
        """Final normalized hidden states [T, n_embd] for a full causal pass over tokens."""
        tokens = np.asarray(tokens, dtype=np.int64)
        pos = np.arange(len(tokens), dtype=np.int64)
        h = self.tok_embd[tokens] * self.dtype(math.sqrt(self.n_embd))
        for il, L in enumerate(self.layers):
            a = self.attention(L, self.rmsnorm(h, L["attn_norm"]), pos, il)
            h = h + self.rmsnorm(a, L["post_attention_norm"])
            x = self.rmsnorm(h, L["ffn_norm"])
            ty = L["types"]
            f = self.gelu_tanh(self.mm(x, L["ffn_gate"], ty["ffn_gate"])) * self.mm(x, L["ffn_up"], ty["ffn_up"])
            f = self.mm(f, L["ffn_down"], ty["ffn_down"])
            h = h + self.rmsnorm(f, L["post_ffw_norm"])
        return self.rmsnorm(h, self.output_norm)

    def logits(self, hid):
        # tied output projection: a matmul with token_embd (its get_rows use above is a plain
        # dequantize, no activation quantization)
        return self.mm(hid, self.tok_embd, self.wtype["token_embd.weight"])


# ----------------------------------------------------------------------------
# Tokenizer: a SentencePiece model rebuilt from the GGUF vocabulary
# ----------------------------------------------------------------------------

class Tokenizer:
    """SentencePiece model rebuilt from the GGUF vocabulary, plus Gemma's literal pre-split.

    Gemma 3 stores whitespace runs ('  ' .. 31 spaces), newline runs and some HTML tags as
    USER_DEFINED pieces whose text contains *literal* spaces. The model was trained with
    those pieces matched atomically on the raw text (this is what HF's added-token matching
    and llama.cpp's user-defined-token partition do). The stock sentencepiece library
    escapes ' ' -> U+2581 before its user-defined matcher sees the text, so it would split a
    run of N spaces into N single '▁' tokens. Hence: scan the raw text left to right,
    emit the longest USER_DEFINED piece that matches at the cursor, and hand the text in
    between to sentencepiece (BPE, byte fallback, no dummy prefix).
    """

    def __init__(self, reader):
        import sentencepiece as spm
        from sentencepiece import sentencepiece_model_pb2 as pb

        assert field_value(reader, "tokenizer.ggml.model") == "llama"  # SentencePiece
        tf = reader.fields["tokenizer.ggml.tokens"]
        sf = reader.fields["tokenizer.ggml.scores"]
        yf = reader.fields["tokenizer.ggml.token_type"]
        m = pb.ModelProto()
        self.user_defined = {}
        for i, (ti, si, yi) in enumerate(zip(tf.data, sf.data, yf.data)):
            piece = m.pieces.add()
            piece.piece = bytes(tf.parts[ti]).decode("utf-8")
            piece.score = float(sf.parts[si][0])
            piece.type = int(yf.parts[yi][0])  # GGUF token types use SentencePiece's enum
            if piece.type == pb.ModelProto.SentencePiece.USER_DEFINED:
                self.user_defined[piece.piece] = i
        self.max_ud = max(len(p) for p in self.user_defined)
        ts = m.trainer_spec
        ts.model_type = pb.TrainerSpec.BPE
        ts.vocab_size = len(m.pieces)
        ts.byte_fallback = True
        ts.unk_id = int(field_value(reader, "tokenizer.ggml.unknown_token_id", 3))
        ts.bos_id = int(field_value(reader, "tokenizer.ggml.bos_token_id", 2))
        ts.eos_id = int(field_value(reader, "tokenizer.ggml.eos_token_id", 1))
        ts.pad_id = int(field_value(reader, "tokenizer.ggml.padding_token_id", 0))
        ns = m.normalizer_spec
        ns.name = "identity"
        ns.add_dummy_prefix = bool(field_value(reader, "tokenizer.ggml.add_space_prefix", False))
        assert not ns.add_dummy_prefix  # the pre-split below assumes no dummy prefix
        ns.remove_extra_whitespaces = False
        ns.escape_whitespaces = True
        self.sp = spm.SentencePieceProcessor()
        self.sp.LoadFromSerializedProto(m.SerializeToString())

    def encode(self, text):
        """Returns [(token_id, start_char, end_char)] covering text."""
        out = []
        frag_start = 0
        i = 0

        def flush(end):
            if end > frag_start:
                pos = frag_start
                for tid in self.sp.encode(text[frag_start:end], out_type=int):
                    piece = self.sp.id_to_piece(tid)
                    n = 0 if self.sp.is_byte(tid) else len(piece)
                    out.append((tid, pos, pos + n))
                    pos += n
        while i < len(text):
            for L in range(min(self.max_ud, len(text) - i), 0, -1):
                tid = self.user_defined.get(text[i:i + L])
                if tid is not None:
                    flush(i)
                    out.append((tid, i, i + L))
                    i += L
                    frag_start = i
                    break
            else:
                i += 1
        flush(len(text))
        return out

    def decode(self, ids):
        return self.sp.decode([int(i) for i in ids])

    def piece(self, tid):
        return self.sp.id_to_piece(int(tid))


def tokenize_prefix(tok, text, n_text_tokens):
    """First n_text_tokens tokens of text and the exact text prefix they cover (or None)."""
    enc = tok.encode(text)[:n_text_tokens]
    assert len(enc) == n_text_tokens, "prompt text too short"
    ids = [t for t, _, _ in enc]
    ok = all(e > s for _, s, e in enc) and all(a[2] == b[1] for a, b in zip(enc, enc[1:]))
    return ids, (text[: enc[-1][2]] if ok else None)


# ----------------------------------------------------------------------------
# Golden statistics
# ----------------------------------------------------------------------------

def row_stats(row, k):
    """argmax, logsumexp (float64 accumulation), top-k ids/logits (desc, ties -> lower id)."""
    part = np.argpartition(-row, k)[: k + 8]  # a little slack for ties at the boundary
    vals = row[part]
    order = np.lexsort((part, -vals))
    top = part[order][:k]
    # ensure nothing outside `part` ties/exceeds the k-th value (rare; fall back to a full sort)
    kth = row[top[-1]]
    if np.count_nonzero(row >= kth) > k:
        full = np.lexsort((np.arange(row.size), -row))
        top = full[:k]
    r64 = row.astype(np.float64)
    mx = r64.max()
    lse = mx + math.log(np.exp(r64 - mx).sum())
    return int(top[0]), lse, top.astype(np.uint32), row[top].astype(np.float32)


def compute_stats(model, tokens, chunk=50):
    T = len(tokens)
    hid = model.hidden(tokens)
    out = []
    for s in range(0, T, chunk):
        lg = model.logits(hid[s:s + chunk])
        for j in range(lg.shape[0]):
            p = s + j
            am, lse, ids, vals = row_stats(lg[j], TOP_K)
            nxt = float(lg[j, tokens[p + 1]]) if p + 1 < T else float("nan")
            out.append((am, lse, nxt, ids, vals))
    return out


def greedy(model, prefix, n):
    toks = list(prefix)
    for _ in range(n):
        h = model.hidden(toks)
        lg = model.logits(h[-1:])[0]
        toks.append(int(np.argmax(lg)))
    return toks[len(prefix):]


def write_golden(path, tokens, stats, n_vocab, n_prefix, greedy_ids):
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<4I", VERSION, len(tokens), TOP_K, n_vocab))
        f.write(np.asarray(tokens, dtype="<u4").tobytes())
        for am, lse, nxt, ids, vals in stats:
            f.write(struct.pack("<Iff", am, lse, nxt))
            f.write(ids.astype("<u4").tobytes())
            f.write(vals.astype("<f4").tobytes())
        f.write(struct.pack("<2I", n_prefix, len(greedy_ids)))
        f.write(np.asarray(greedy_ids, dtype="<u4").tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/lockstep/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--prompt-file", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--n-tokens", type=int, default=600, help="total tokens including BOS")
    ap.add_argument("--out", default="tests/data/gemma3_oracle.bin")
    ap.add_argument("--prompt-out", default=None,
                    help="write the exact text prefix covered by the tokens here")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--check64", action="store_true",
                    help="also run in float64 and report the float32 oracle's own noise")
    ap.add_argument("--n-prefix", type=int, default=32)
    ap.add_argument("--n-greedy", type=int, default=20)
    ap.add_argument("--ablate-swa", action="store_true",
                    help="also run with the sliding window disabled, to show it matters past 512")
    ap.add_argument("--md", default=None, help="write a markdown report here")
    ap.add_argument("--act-quant", action="store_true",
                    help="quantize each matmul's activation rows to the weight's dot type "
                         "(Q8_0 / Q8_K / F16) and back, as an integer matmul hot path does")
    args = ap.parse_args()

    t0 = time.time()
    dtype = np.float32 if args.dtype == "float32" else np.float64
    model = Gemma3(args.model, dtype, act_quant=args.act_quant)
    tok = Tokenizer(model.reader)
    t_load = time.time() - t0
    print(f"loaded + dequantized in {t_load:.1f}s; vocab {model.n_vocab}", file=sys.stderr)

    text = open(args.prompt_file, encoding="utf-8").read()
    bos = int(field_value(model.reader, "tokenizer.ggml.bos_token_id", 2))
    ids, prefix = tokenize_prefix(tok, text, args.n_tokens - 1)
    tokens = [bos] + ids
    if prefix is not None:
        retok = [t for t, _, _ in tok.encode(prefix)]
        print(f"re-tokenizing the covered prefix ({len(prefix)} chars) "
              f"{'reproduces' if retok == ids else 'DOES NOT reproduce'} the tokens", file=sys.stderr)
        if args.prompt_out:
            with open(args.prompt_out, "w", encoding="utf-8") as f:
                f.write(prefix)

    t1 = time.time()
    stats = compute_stats(model, tokens)
    t_fwd = time.time() - t1
    print(f"forward + logits over {len(tokens)} tokens: {t_fwd:.1f}s", file=sys.stderr)

    t2 = time.time()
    g = greedy(model, tokens[: args.n_prefix], args.n_greedy)
    t_greedy = time.time() - t2
    write_golden(args.out, tokens, stats, model.n_vocab, args.n_prefix, g)

    nll = np.array([s[1] - s[2] for s in stats[:-1]])
    top1 = np.mean([s[0] == tokens[p + 1] for p, s in enumerate(stats[:-1])])
    gaps = np.array([s[4][0] - s[4][1] for s in stats])
    lines = []
    say = lambda s="": (print(s), lines.append(s))
    say(f"- model: `{os.path.basename(args.model)}`; dtype {args.dtype}"
        + ("; activations quantized to the weights' dot types (--act-quant)" if args.act_quant else ""))
    say(f"- tokens: {len(tokens)} (BOS + {len(ids)} text tokens of `{args.prompt_file}`)")
    say(f"- mean NLL over the {len(nll)} predicted tokens: {nll.mean():.4f} nats "
        f"-> perplexity {math.exp(nll.mean()):.3f}")
    say(f"  - positions < 512: ppl {math.exp(nll[:511].mean()):.3f}; "
        f"positions >= 512: ppl {math.exp(nll[511:].mean()):.3f}")
    say(f"- top-1 accuracy on the text: {top1:.3f}")
    say(f"- rows with top1-top2 logit gap < 1e-3: {int((gaps < 1e-3).sum())} "
        f"(< 1e-2: {int((gaps < 1e-2).sum())}); min gap {gaps.min():.2e}")
    say(f"- timings: load+dequantize {t_load:.1f}s, forward+logits {t_fwd:.1f}s, "
        f"greedy {args.n_greedy} tokens (no KV cache) {t_greedy:.1f}s")
    prompt_txt = tok.decode(tokens[1: args.n_prefix])
    say(f"- greedy: prompt = first {args.n_prefix} tokens (incl. BOS) = {prompt_txt!r}")
    say(f"  - continuation ids: {g}")
    say(f"  - continuation text: {tok.decode(g)!r}")

    if args.check64:
        t3 = time.time()
        m64 = Gemma3(args.model, np.float64, act_quant=args.act_quant)
        s64 = compute_stats(m64, tokens)
        t64 = time.time() - t3
        d_top, d_lse, d_next, am_diff, set_diff = 0.0, 0.0, 0.0, 0, 0
        for a, b in zip(stats, s64):
            # compare logits of the float32 top-k ids (float64 values of those ids)
            common = {int(i): float(v) for i, v in zip(b[3], b[4])}
            for i, v in zip(a[3], a[4]):
                if int(i) in common:
                    d_top = max(d_top, abs(float(v) - common[int(i)]))
            d_lse = max(d_lse, abs(a[1] - b[1]))
            if not math.isnan(a[2]):
                d_next = max(d_next, abs(a[2] - b[2]))
            am_diff += a[0] != b[0]
            set_diff += set(a[3].tolist()) != set(b[3].tolist())
        nll64 = np.array([s[1] - s[2] for s in s64[:-1]])
        say(f"- float32 vs float64 oracle ({t64:.1f}s): max |dlogit| over top-{TOP_K} {d_top:.2e}, "
            f"max |dlogsumexp| {d_lse:.2e}, max |dnext_logit| {d_next:.2e}, "
            f"max |dNLL| {np.abs(nll - nll64).max():.2e}, argmax mismatches {am_diff}, "
            f"top-{TOP_K} set mismatches {set_diff}; float64 ppl {math.exp(nll64.mean()):.4f}")
    if args.ablate_swa:
        saved = model.sliding_window
        model.sliding_window = 1 << 30
        hid = model.hidden(tokens)
        model.sliding_window = saved
        full = np.concatenate([model.logits(hid[s:s + 50]) for s in range(0, len(tokens), 50)])
        top_ids = np.stack([s[3] for s in stats])
        ref = np.stack([s[4] for s in stats])
        d = np.abs(np.take_along_axis(full, top_ids.astype(np.int64), axis=1) - ref).max(axis=1)
        w = model.sliding_window
        say(f"- ablation, sliding window disabled: max |dlogit| (top-{TOP_K}) at positions < {w}: "
            f"{d[:w].max():.2e}; at positions >= {w}: max {d[w:].max():.2e}, mean {d[w:].mean():.2e}; "
            f"argmax changes at {int(sum(int(np.argmax(full[p])) != stats[p][0] for p in range(len(tokens))))} positions")
    if args.md:
        with open(args.md, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
