#!/usr/bin/env python3
"""Print a summary of a lockstep golden logits file (format: see gemma3_numpy.py header).

  python3 tools/oracle/read_golden.py tests/data/gemma3_oracle.bin [--model M.gguf] [--rows N]
With --model, token ids are shown as vocabulary pieces (needs the `gguf` package).
"""
import argparse
import math
import struct
import sys

import numpy as np

MAGIC = b"LSGOLD01"


def read_golden(path):
    data = open(path, "rb").read()
    if data[:8] != MAGIC:
        sys.exit(f"{path}: bad magic {data[:8]!r}")
    version, T, K, n_vocab = struct.unpack_from("<4I", data, 8)
    if version != 1:
        sys.exit(f"{path}: unsupported version {version}")
    off = 24
    tokens = np.frombuffer(data, "<u4", T, off).copy()
    off += 4 * T
    rec = np.dtype([("argmax", "<u4"), ("lse", "<f4"), ("next_logit", "<f4"),
                    ("top_ids", "<u4", (K,)), ("top_logits", "<f4", (K,))])
    rows = np.frombuffer(data, rec, T, off).copy()
    off += rec.itemsize * T
    n_prefix, n_greedy = struct.unpack_from("<2I", data, off)
    off += 8
    greedy = np.frombuffer(data, "<u4", n_greedy, off).copy()
    off += 4 * n_greedy
    if off != len(data):
        sys.exit(f"{path}: {len(data) - off} trailing bytes")
    return dict(T=T, K=K, n_vocab=n_vocab, tokens=tokens, rows=rows,
                n_prefix=n_prefix, greedy=greedy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--model", default=None)
    ap.add_argument("--rows", type=int, default=5)
    a = ap.parse_args()
    g = read_golden(a.path)
    piece = str
    if a.model:
        import gguf
        f = gguf.GGUFReader(a.model).fields["tokenizer.ggml.tokens"]
        vocab = [bytes(f.parts[i]).decode("utf-8", "replace") for i in f.data]
        piece = lambda i: repr(vocab[int(i)])
    T, rows, tokens = g["T"], g["rows"], g["tokens"]
    print(f"{a.path}: T={T} top_k={g['K']} n_vocab={g['n_vocab']}")
    print("first tokens:", " ".join(piece(t) for t in tokens[:16]))
    nll = rows["lse"][:-1].astype(np.float64) - rows["next_logit"][:-1]
    print(f"mean NLL {nll.mean():.4f} nats, perplexity {math.exp(nll.mean()):.3f}")
    top1 = np.mean(rows["argmax"][:-1] == tokens[1:])
    print(f"top-1 accuracy {top1:.3f}")
    assert np.all(rows["argmax"] == rows["top_ids"][:, 0])
    gap = rows["top_logits"][:, 0] - rows["top_logits"][:, 1]
    print(f"min top1-top2 gap {gap.min():.3e} at position {int(gap.argmin())}")
    for p in list(range(min(a.rows, T))) + [T - 1]:
        r = rows[p]
        tops = ", ".join(f"{piece(i)}:{v:.3f}" for i, v in zip(r["top_ids"][:4], r["top_logits"][:4]))
        print(f"  pos {p:4d} tok {piece(tokens[p])} lse {r['lse']:.4f} next {r['next_logit']:.4f} | {tops}")
    print(f"greedy after {g['n_prefix']} tokens:", " ".join(piece(t) for t in g["greedy"]))


if __name__ == "__main__":
    main()
