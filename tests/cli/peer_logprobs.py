#!/usr/bin/env python3
"""Per-token log-probabilities of the default model, requantized to each weight type family
(F16, BF16, legacy, K-quants, IQ4_NL / IQ4_XS, MXFP4) by lockstep's reference quantizers, against llama.cpp's on the
very same files (tests/data/peer_logprobs/README.md says how llama.cpp's were made).

The default model is a real one (perplexity ~15 on this text, far from the tiny random models'
near-uniform ~1600), so a weight type decoded or multiplied wrongly moves each token's
log-probability by whole nats, where the tiny models' perplexity barely moves.

  peer_logprobs.py test LOCKSTEP MAKE_TEST_MODEL SOURCE_DIR MODEL|default
      for every row of tests/data/peer_logprobs/expect.tsv: write the file again (its sha256
      must be the one llama.cpp ran on), run `lockstep perplexity --kl-divergence-base`, and
      compare each scored token with llama.cpp's.
  peer_logprobs.py extract KLD_BASE MODEL_FILE OUT
      the compact record of a --kl-divergence-base file (llama.cpp's or lockstep's format, the
      same): the text's tokens, and per scored token the text token's log-probability, the
      most likely token and its log-probability.
"""
import array
import hashlib
import math
import os
import struct
import subprocess
import sys
import tempfile

# The text, context and chunk every record uses: 127 scored tokens (the second half of one
# 256-token chunk, as llama-perplexity scores).
TEXT = os.path.join("tests", "data", "GPL-3.txt")
N_CTX, N_CHUNK = 256, 1


def read_logprob_file(path):
    """(n_ctx, n_vocab, tokens, rows): rows of (log p(text token), argmax, log p(argmax))."""
    with open(path, "rb") as f:
        if f.read(8) != b"_logits_":
            raise ValueError(f"{path}: not a --kl-divergence-base file")
        n_ctx, n_vocab, n_chunk = struct.unpack("<iii", f.read(12))
        tokens = array.array("i")
        tokens.frombytes(f.read(4 * n_ctx * n_chunk))
        row_bytes = 2 * (2 * ((n_vocab + 1) // 2) + 4)
        first = n_ctx // 2
        rows = []
        for c in range(n_chunk):
            for i in range(first, n_ctx - 1):
                row = f.read(row_bytes)
                if len(row) != row_bytes:
                    raise ValueError(f"{path}: ends inside chunk {c}")
                scale, lowest = struct.unpack("<ff", row[:8])
                q = array.array("H")
                q.frombytes(row[8:8 + 2 * n_vocab])
                top = max(q)
                nxt = tokens[c * n_ctx + i + 1]
                rows.append((lowest + scale * q[nxt], q.index(top), lowest + scale * top))
    return n_ctx, n_vocab, list(tokens), rows


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def write_record(out, kld, model):
    n_ctx, n_vocab, tokens, rows = read_logprob_file(kld)
    with open(out, "w") as f:
        f.write(f"sha256\t{sha256(model)}\nn_ctx\t{n_ctx}\nn_vocab\t{n_vocab}\n")
        f.write("tokens\t" + " ".join(map(str, tokens)) + "\n")
        for lp, am, lp_top in rows:
            f.write(f"{lp:.5f}\t{am}\t{lp_top:.5f}\n")


def read_record(path):
    rec, rows = {}, []
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] in ("sha256", "n_ctx", "n_vocab", "tokens"):
            rec[f[0]] = f[1]
        else:
            rows.append((float(f[0]), int(f[1]), float(f[2])))
    rec["tokens"] = [int(t) for t in rec["tokens"].split()]
    rec["rows"] = rows
    return rec


# Bounds, per file (expect.tsv: the mean and the largest |log p - log p_llama.cpp| over the 127
# tokens, the perplexity's relative difference, the least share of tokens whose most likely
# next token is llama.cpp's). With F16 weights both engines multiply f16-rounded activations
# and agree to a few thousandths of a nat. With quantized weights both round activations to
# 8-bit blocks (Q8_0 / Q8_1 / Q8_K) before their integer dot products, in their own summation
# orders, and through 18 layers that rounding is chaotic (a last-bit change moves activations
# across a quantization step: tests/data/gemma3_oracle.md), so some hundredths of a nat on
# average are the floor, more the more degraded the model (Q2_K, Q3_K, MXFP4). BF16:
# llama.cpp rounds the activations to bf16, lockstep keeps them float32. Each bound sits about
# 1.5x above what was measured (README.md); a wrong codebook is far outside: lockstep's Q4_0
# file scored against llama.cpp's Q4_1 record gives a mean of 0.91 nats, +9.5% perplexity and
# 62% top-1 agreement.
def compare(got, want, bounds):
    MEAN_ABS_NLL, MAX_ABS_NLL, PPL_REL, TOP1_MIN = bounds
    n = len(want["rows"])
    if len(got[3]) != n:
        return [f"{len(got[3])} scored tokens, llama.cpp {n}"], ""
    if got[2] != want["tokens"]:
        k = next(i for i, (a, b) in enumerate(zip(got[2], want["tokens"])) if a != b)
        return [f"tokenized differently from llama.cpp at token {k}: {got[2][k]} vs {want['tokens'][k]}"], ""
    d = [abs(g[0] - w[0]) for g, w in zip(got[3], want["rows"])]
    mean, worst = sum(d) / n, max(d)
    ppl_g = math.exp(-sum(g[0] for g in got[3]) / n)
    ppl_w = math.exp(-sum(w[0] for w in want["rows"]) / n)
    top1 = sum(g[1] == w[1] for g, w in zip(got[3], want["rows"])) / n
    fails = []
    if not mean <= MEAN_ABS_NLL:
        fails.append(f"mean |dNLL| {mean:.4f} > {MEAN_ABS_NLL}")
    if not worst <= MAX_ABS_NLL:
        fails.append(f"max |dNLL| {worst:.4f} > {MAX_ABS_NLL}")
    if not abs(ppl_g / ppl_w - 1) <= PPL_REL:
        fails.append(f"PPL {ppl_g:.4f} vs llama.cpp {ppl_w:.4f}: {100 * (ppl_g / ppl_w - 1):+.2f}% beyond {100 * PPL_REL}%")
    if not top1 >= TOP1_MIN:
        fails.append(f"top-1 agreement {top1:.3f} < {TOP1_MIN}")
    return fails, f"PPL {ppl_g:9.4f} vs {ppl_w:9.4f} ({100 * (ppl_g / ppl_w - 1):+6.2f}%)  mean |dNLL| {mean:.4f}  max {worst:.4f}  top-1 {top1:.3f}"


def default_model():
    """Where the engine looks for the default model (core/runtime/default_model.cpp)."""
    if os.environ.get("LOCKSTEP_MODEL"):
        return os.environ["LOCKSTEP_MODEL"]
    cache = os.environ.get("LOCKSTEP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ.get("HOME", "."), ".cache"), "lockstep")
    return os.path.join(cache, "gemma-3-270m-q4_k_m.gguf")


def test(lockstep, make_model, src, model):
    if model == "default":
        model = default_model()
    data = os.path.join(src, "tests", "data", "peer_logprobs")
    rows = [l.split("\t") for l in open(os.path.join(data, "expect.tsv")).read().splitlines()[1:] if l.strip()]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, wtype, *bounds in rows:
            want = read_record(os.path.join(data, name + ".tsv"))
            path = model
            if wtype != "-":  # the default model requantized, written again here
                path = os.path.join(tmp, name + ".gguf")
                subprocess.run([make_model, "--requantize", model, "--type", wtype, "--out", path], check=True,
                               stdout=subprocess.DEVNULL)
            digest = sha256(path)
            if digest != want["sha256"]:
                print(f"{name}: the file is not the one llama.cpp ran on (sha256 {digest}, want {want['sha256']}): "
                      "the reference quantizer or the GGUF writer changed; make the record again (README)")
                failed += 1
                continue
            kld = os.path.join(tmp, name + ".kld")
            out = subprocess.run([lockstep, "perplexity", "-m", path, "-f", os.path.join(src, TEXT), "-c", str(N_CTX),
                                  "--chunks", str(N_CHUNK), "-t", "2", "--kl-divergence-base", kld],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{name}: lockstep perplexity failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
                failed += 1
                continue
            fails, line = compare(read_logprob_file(kld), want, [float(b) for b in bounds])
            print(f"{name:<8} {line}" + ("" if not fails else "  FAIL: " + "; ".join(fails)), flush=True)
            failed += bool(fails)
            os.remove(kld)
            if path != model:
                os.remove(path)
    print(f"{len(rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "test":
        return test(*sys.argv[2:6])
    if len(sys.argv) == 5 and sys.argv[1] == "extract":
        write_record(sys.argv[4], sys.argv[2], sys.argv[3])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
