#!/usr/bin/env python3
"""Writes core/quant/iq_grid_words.h: the codebooks of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S,
IQ3_XXS, IQ3_S, IQ1_S/IQ1_M) and the 7-bit sign table, as the `gguf` Python package defines
them (gguf.quants: grid_hex decoded through grid_map). They are part of the file format: a
block's bytes index these tables.

Regenerate: python3 tools/golden/make_iq_grids.py [out_path]   (needs gguf >= 0.17)
"""
import sys

import numpy as np
from gguf import quants as Q

OUT = sys.argv[1] if len(sys.argv) > 1 else "core/quant/iq_grid_words.h"


def grid_of(cls):
    cls.init_grid()
    g = cls.grid.reshape(cls.grid_shape)
    return g.astype(np.int64)


def words(rows, per):
    """Each row of small ints as little-endian int8 bytes, cut into 32-bit words (an 8-value
    row is two words, low first): GLSL has no 64-bit integers."""
    out = []
    for r in rows:
        v = 0
        for k, x in enumerate(r):
            v |= (int(x) & 0xFF) << (8 * k)
        for w in range(per // 4):
            out.append((v >> (32 * w)) & 0xFFFFFFFF)
    return out


def macro(name, values, per_line=6):
    lines = []
    for i in range(0, len(values), per_line):
        lines.append("    " + ", ".join(f"0x{v:08X}u" for v in values[i:i + per_line]))
    return f"#define {name} \\\n" + ", \\\n".join(lines) + "\n"


def main():
    parts = []
    tables = [
        ("LS_IQ2XXS_GRID_WORDS", Q.IQ2_XXS, 8), ("LS_IQ2XS_GRID_WORDS", Q.IQ2_XS, 8), ("LS_IQ2S_GRID_WORDS", Q.IQ2_S, 8),
        ("LS_IQ3XXS_GRID_WORDS", Q.IQ3_XXS, 4), ("LS_IQ3S_GRID_WORDS", Q.IQ3_S, 4), ("LS_IQ1S_GRID_WORDS", Q.IQ1_S, 8),
    ]
    for name, cls, n in tables:
        g = grid_of(cls)
        assert g.shape[1] == n
        parts.append(f"/* {g.shape[0]} entries, {n // 4} word(s) each */\n" + macro(name, words(g, n)))
    ksigns = np.frombuffer(Q.IQ2_XXS.ksigns, dtype=np.uint8)
    parts.append("/* 128 sign bytes, byte i % 4 of word i / 4 */\n" + macro("LS_IQ_SIGNS_WORDS", words(ksigns.reshape(32, 4), 4)))
    with open(OUT, "w") as f:
        f.write("""/* The codebooks of the grid i-quants, part of the GGUF format: written by
   tools/golden/make_iq_grids.py from the `gguf` Python package's tables (do not edit).
   Each entry packs a group's values as int8 bytes, element j in byte j (little-endian), cut into
   32-bit words, low word first: IQ2 grids 8 values of {8, 25, 43} (two words); IQ3_XXS 4 of
   {4, 12, ..., 62} and IQ3_S 4 of {1, 3, ..., 15} (one word); IQ1 8 of {-1, 0, 1} (two words).
   Sign byte i: 7 sign bits i and an eighth that makes the parity even. Plain #defines of 32-bit
   words, like quant_levels.h, so C++ (iq_grids.h), CUDA and GLSL read the one definition. */
#ifndef LS_CORE_QUANT_IQ_GRID_WORDS_H
#define LS_CORE_QUANT_IQ_GRID_WORDS_H
""" + "\n".join(parts) + "#endif /* LS_CORE_QUANT_IQ_GRID_WORDS_H */\n")


if __name__ == "__main__":
    main()
