#!/usr/bin/env bash
# The canonical arithmetic (core/rules/canon.h) rounds every product before its sum: no fused
# multiply-add anywhere in the code that computes a value the backends must match bit for bit.
# -ffp-contract=off keeps the compiler from fusing on its own; this checks the object code
# itself, as the PTX scan does for CUDA, so an intrinsic, a std::fma or a flag that slipped
# back in fails here instead of as a one-ulp drift on some machines only.
#   check_no_fma.sh OBJDUMP LIB...   (static libraries or objects)
set -euo pipefail
objdump=$1; shift
(($#)) || { echo "check_no_fma: no library named" >&2; exit 2; }
bad=0
for lib in "$@"; do
  [ -f "$lib" ] || { echo "$lib: missing (build the project first)"; bad=1; continue; }
  # x86 FMA3/FMA4 (vfmadd*, vfmsub*, vfnmadd*, vfnmsub*, vfmaddsub*, vfmsubadd*) and AArch64's
  # fmla/fmls/fmadd/fmsub/fnmadd/fnmsub, with the function each sits in.
  hits=$("$objdump" -d --no-show-raw-insn -C "$lib" | awk '
    /^[0-9a-f]+ <.*>:$/ { fn = $0; sub(/^[0-9a-f]+ </, "", fn); sub(/>:$/, "", fn); next }
    $2 ~ /^(vf(n)?m(add|sub)|fml[as]$|fmadd$|fmsub$|fnmadd$|fnmsub$)/ { n[fn]++ }
    END { for (f in n) printf "  %d in %s\n", n[f], f }')
  if [ -n "$hits" ]; then
    echo "$(basename "$lib"): fused multiply-add instructions:"
    echo "$hits" | sort | head -40
    bad=1
  fi
done
if ((bad)); then exit 1; fi
echo "no fused multiply-add in: $(for l in "$@"; do basename "$l"; done | tr '\n' ' ')"
