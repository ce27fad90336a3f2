#!/usr/bin/env bash
# The installed C API as a user gets it: `cmake --install` into a fresh prefix; the library
# exports the functions of lockstep.h and nothing else; examples/c builds against the prefix
# with CMake's find_package and with pkg-config, both programs give the same greedy text, and
# that text is what `lockstep run --temp 0` prints (when the CLI is given).
#   check_install.sh CMAKE BUILD_DIR SOURCE_DIR OUT [LOCKSTEP_CLI]
set -euo pipefail
cmake=$1 build=$2 src=$3 out=$4 cli=${5:-}
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd) src=$(cd "$src" && pwd)
prefix="$out/prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$out/install.log"
fail() { echo "check_install: $*" >&2; exit 1; }
lib=$(find "$prefix" -name 'liblockstep.so' | head -n 1)
pc=$(find "$prefix" -name 'lockstep.pc' | head -n 1)
[ -n "$lib" ] || fail "no liblockstep.so under $prefix"
[ -n "$pc" ] || fail "no lockstep.pc under $prefix"
[ -f "$prefix/include/lockstep.h" ] || fail "no include/lockstep.h under $prefix"
[ -n "$(find "$prefix" -name lockstepConfig.cmake)" ] || fail "no lockstepConfig.cmake under $prefix"
[ -n "$(find "$prefix" -name lockstepConfigVersion.cmake)" ] || fail "no lockstepConfigVersion.cmake under $prefix"

# Exports: exactly the header's functions.
nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$out/exported.txt"
grep -o 'LOCKSTEP_API [^(]*(' "$src/include/lockstep.h" | grep -o 'lockstep_[a-z0-9_]*(' | tr -d '(' | sort -u >"$out/declared.txt"
if ! diff -u "$out/declared.txt" "$out/exported.txt" >"$out/exports.diff"; then
  cat "$out/exports.diff" >&2
  fail "liblockstep exports other symbols than lockstep.h declares (- declared only, + exported only)"
fi
echo "check_install: $(wc -l <"$out/declared.txt") functions exported, nothing else"

model="$src/tests/data/llama_tiny.gguf"
prompt="once upon a time"
# CMake: find_package(lockstep), target lockstep::lockstep.
"$cmake" -S "$src/examples/c" -B "$out/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" \
  || { cat "$out/cmake.log" >&2; fail "examples/c does not configure against the prefix"; }
"$cmake" --build "$out/cmake" >>"$out/cmake.log" 2>&1 || { cat "$out/cmake.log" >&2; fail "examples/c does not build with CMake"; }
# pkg-config, with the Makefile.
PKG_CONFIG_PATH="$(dirname "$pc")" make -s -C "$src/examples/c" OUT="$out" >"$out/make.log" 2>&1 \
  || { cat "$out/make.log" >&2; fail "examples/c does not build with pkg-config"; }
"$out/cmake/simple" "$model" "$prompt" 24 >"$out/cmake.txt" 2>"$out/cmake.err" || { cat "$out/cmake.err" >&2; fail "the CMake build fails"; }
"$out/simple" "$model" "$prompt" 24 >"$out/make.txt" 2>"$out/make.err" || { cat "$out/make.err" >&2; fail "the pkg-config build fails"; }
cmp "$out/cmake.txt" "$out/make.txt" || fail "the two builds print different text"
grep -q "generated" "$out/cmake.err" || fail "no generation line: $(cat "$out/cmake.err")"

# The same greedy text as the C++ path, lockstep run. It streams complete UTF-8 only, with
# U+FFFD for each maximal invalid subpart of the bytes; the example prints each token's bytes
# as they are, which Python's decoder replaces by the same rule. (The tiny llama's greedy
# text mixes characters and lone bytes.)
if [ -n "$cli" ]; then
  "$cli" run -m "$model" -p "$prompt" -n 24 --temp 0 >"$out/cli.txt" 2>"$out/cli.err" || { cat "$out/cli.err" >&2; fail "lockstep run fails"; }
  python3 - "$out/cli.txt" "$out/make.txt" "$prompt" <<'PY' || fail "the C API's greedy text differs from lockstep run's"
import sys
cli = open(sys.argv[1], 'rb').read().decode('utf-8')
api = open(sys.argv[2], 'rb').read().decode('utf-8', 'replace')
if cli != api:
    print('lockstep run:', repr(cli), '\nC API:       ', repr(api), file=sys.stderr)
    sys.exit(1)
gen = api[len(sys.argv[3]):].strip('\n')
assert len(gen.replace('\ufffd', '')) >= 8, 'too little text to compare: ' + repr(gen)
print('check_install: the C API and lockstep run give the same text:', repr(api))
PY
fi
echo "check_install: ok"
