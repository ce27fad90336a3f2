#!/usr/bin/env python3
"""Writes core/quant/iq_grids.h: the codebooks of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S,
IQ3_XXS, IQ3_S, IQ1_S/IQ1_M) and the 7-bit sign table, as the `gguf` Python package defines
them (gguf.quants: grid_hex decoded through grid_map). They are part of the file format: a
block's bytes index these tables.

Regenerate: python3 tools/golden/make_iq_grids.py [out_path]   (needs gguf >= 0.17)
"""
import sys

import numpy as np
from gguf import quants as Q

OUT = sys.argv[1] if len(sys.argv) > 1 else "core/quant/iq_grids.h"


def grid_of(cls):
    cls.init_grid()
    g = cls.grid.reshape(cls.grid_shape)
    return g.astype(np.int64)


def packed(rows, bytes_per):
    """Each row of small ints as one little-endian integer of int8 bytes."""
    out = []
    for r in rows:
        v = 0
        for k, x in enumerate(r):
            v |= (int(x) & 0xFF) << (8 * k)
        out.append(v)
    return out


def table(name, ctype, values, per_line, width):
    lines = []
    for i in range(0, len(values), per_line):
        lines.append("    " + ", ".join(f"0x{v:0{width}X}" + ("ull" if ctype == "uint64_t" else "u") for v in values[i:i + per_line]) + ",")
    return f"inline constexpr {ctype} {name}[{len(values)}] = {{\n" + "\n".join(lines) + "\n};\n"


def main():
    parts = []
    tables = [
        ("kIQ2XXSGrid", Q.IQ2_XXS, 8), ("kIQ2XSGrid", Q.IQ2_XS, 8), ("kIQ2SGrid", Q.IQ2_S, 8),
        ("kIQ3XXSGrid", Q.IQ3_XXS, 4), ("kIQ3SGrid", Q.IQ3_S, 4), ("kIQ1SGrid", Q.IQ1_S, 8),
    ]
    for name, cls, n in tables:
        g = grid_of(cls)
        assert g.shape[1] == n
        ctype, width = ("uint64_t", 16) if n == 8 else ("uint32_t", 8)
        parts.append(table(name, ctype, packed(g, n), 4, width))
    ksigns = list(np.frombuffer(Q.IQ2_XXS.ksigns, dtype=np.uint8))
    parts.append("inline constexpr uint8_t kIQSigns[128] = {\n" + "\n".join(
        "    " + ", ".join(f"0x{int(v):02X}" for v in ksigns[i:i + 16]) + "," for i in range(0, 128, 16)) + "\n};\n")
    with open(OUT, "w") as f:
        f.write("""// The codebooks of the grid i-quants, part of the GGUF format: written by
// tools/golden/make_iq_grids.py from the `gguf` Python package's tables (do not edit).
// Each entry packs a group's values as int8 bytes, element j in byte j (little-endian):
// IQ2 grids 8 values of {8, 25, 43}; IQ3_XXS 4 of {4, 12, ..., 62}; IQ3_S 4 of {1, 3, ..., 15};
// IQ1 8 of {-1, 0, 1}. kIQSigns[i]: 7 sign bits i and an eighth that makes the parity even.
#pragma once
#include <cstdint>

namespace ls::qb {

""" + "\n".join(parts) + "\n}  // namespace ls::qb\n")


if __name__ == "__main__":
    main()
