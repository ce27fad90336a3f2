#!/usr/bin/env python3
"""Writes tests/data/quant_vectors.bin: random GGUF blocks of every supported type and their
dequantization computed by an independent implementation, the `gguf` Python package
(gguf.quants.dequantize; written with gguf 0.19.0). Q8_1 and Q8_K are not in gguf.quants; their expected values are
d * q computed here with numpy.

Format (little-endian):
  "LSQV" u32 version=1 u32 n_entries
  per entry: u32 ggml_type u32 n_elements u32 n_bytes, n_bytes raw row, n_elements f32
Regenerate: python3 tools/golden/make_quant_vectors.py [out_path]   (deterministic, seeded)
"""
import struct
import sys

import numpy as np
import gguf
from gguf.quants import dequantize

T = gguf.GGMLQuantizationType
rng = np.random.default_rng(20240607)

# (type, block elements, block bytes, byte offsets of f16 scale fields, offset of f32 scale)
LAYOUT = {
    T.Q4_0: (32, 18, [0], None),
    T.Q4_1: (32, 20, [0, 2], None),
    T.Q5_0: (32, 22, [0], None),
    T.Q5_1: (32, 24, [0, 2], None),
    T.Q8_0: (32, 34, [0], None),
    T.Q8_1: (32, 36, [0, 2], None),
    T.Q2_K: (256, 84, [80, 82], None),
    T.Q3_K: (256, 110, [108], None),
    T.Q4_K: (256, 144, [0, 2], None),
    T.Q5_K: (256, 176, [0, 2], None),
    T.Q6_K: (256, 210, [208], None),
    T.Q8_K: (256, 292, [], 0),
    T.IQ4_NL: (32, 18, [0], None),
    T.IQ4_XS: (256, 136, [0], None),
    T.MXFP4: (32, 17, [], None),
    T.TQ1_0: (256, 54, [52], None),
    T.TQ2_0: (256, 66, [64], None),
    T.IQ2_XXS: (256, 66, [0], None),
    T.IQ2_XS: (256, 74, [0], None),
    T.IQ2_S: (256, 82, [0], None),
    T.IQ3_XXS: (256, 98, [0], None),
    T.IQ3_S: (256, 110, [0], None),
    T.IQ1_S: (256, 50, [0], None),
    T.IQ1_M: (256, 56, [], None),
}


def sane_scales(n):
    """Random f16-representable scales: random sign, magnitude 2^U(-24, 3) (subnormals included)."""
    mag = np.exp2(rng.uniform(-24.0, 3.0, n)).astype(np.float32)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0).astype(np.float32)
    return (mag * sign).astype(np.float16)


def quant_entry(t):
    blk, nbytes, f16_offs, f32_off = LAYOUT[t]
    nblocks = 2048 // blk
    raw = rng.integers(0, 256, size=(nblocks, nbytes), dtype=np.uint8)
    for off in f16_offs:
        raw[:, off:off + 2] = sane_scales(nblocks).view(np.uint8).reshape(nblocks, 2)
    if f32_off is not None:
        d = (sane_scales(nblocks).astype(np.float32))
        raw[:, f32_off:f32_off + 4] = d.view(np.uint8).reshape(nblocks, 4)
    if t == T.MXFP4:
        # E8M0 exponents 0..250: subnormal scales included, none whose levels overflow to inf.
        raw[:, 0] = rng.integers(0, 251, size=nblocks, dtype=np.uint8)
    if t == T.IQ1_M:
        # The f16 scale lives in the top nibbles of the four u16 scale words (bytes 48..55).
        h = sane_scales(nblocks).view(np.uint16).astype(np.uint16)
        w = raw[:, 48:56].copy().view(np.uint16) & np.uint16(0x0FFF)
        for k in range(4):
            w[:, k] |= ((h >> np.uint16(4 * k)) & np.uint16(0xF)) << np.uint16(12)
        raw[:, 48:56] = w.view(np.uint8)
    if t == T.Q8_1:
        d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)
        q = raw[:, 4:36].copy().view(np.int8).astype(np.float32)
        expected = (d * q).reshape(-1)
    elif t == T.Q8_K:
        d = raw[:, 0:4].copy().view(np.float32)
        q = raw[:, 4:260].copy().view(np.int8).astype(np.float32)
        expected = (d * q).reshape(-1)
    else:
        expected = dequantize(raw, t).reshape(-1)
    return int(t), nblocks * blk, raw.tobytes(), expected.astype(np.float32)


def f16_entry():
    n = 2048
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint16)
    bits = np.where((bits & 0x7C00) == 0x7C00, bits & 0xFC00, bits).astype(np.uint16)  # no NaN (inf kept)
    bits[:8] = [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00]
    expected = dequantize(bits.view(np.uint8), T.F16).reshape(-1)
    return int(T.F16), n, bits.tobytes(), expected.astype(np.float32)


def bf16_entry():
    n = 2048
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint16)
    bits = np.where((bits & 0x7F80) == 0x7F80, bits & 0xFF80, bits).astype(np.uint16)  # no NaN
    expected = dequantize(bits.view(np.uint8), T.BF16).reshape(-1)
    return int(T.BF16), n, bits.tobytes(), expected.astype(np.float32)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/quant_vectors.bin"
    entries = [quant_entry(t) for t in LAYOUT] + [f16_entry(), bf16_entry()]
    with open(out, "wb") as f:
        f.write(b"LSQV")
        f.write(struct.pack("<II", 1, len(entries)))
        for t, n, raw, exp in entries:
            assert exp.shape == (n,)
            f.write(struct.pack("<III", t, n, len(raw)))
            f.write(raw)
            f.write(exp.astype("<f4").tobytes())


if __name__ == "__main__":
    main()
