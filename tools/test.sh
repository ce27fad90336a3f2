#!/usr/bin/env bash
# Builds lockstep and runs every test: the Release suite (ctest), then the core and CPU
# tests again under AddressSanitizer + UBSan. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
jobs="$(nproc)"

echo "== Release test suite" >&2
(cd build && ctest --output-on-failure --parallel "$jobs")

echo "== AddressSanitizer + UBSan: core and CPU tests (portable AVX2 kernels)" >&2
# LOCKSTEP_NATIVE=OFF: this build compiles the CPU kernels for plain AVX2 + FMA, so on a CPU
# with AVX-512 / VNNI (which the Release build uses) the AVX2 paths are tested too.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKSTEP_SANITIZE=ON -DLOCKSTEP_NATIVE=OFF >/dev/null
cmake --build build-asan --parallel "$jobs" --target lockstep_tests gguf_corpus_replay
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build-asan/tests/gguf_corpus_replay tests/fuzz/corpus
# The tests that run the 270M model are left to the Release run: under ASan they take
# minutes and exercise no code the tiny-model tests do not.
build-asan/tests/lockstep_tests '~[model]' --order rand
