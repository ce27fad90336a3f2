#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one command, for a machine that has one (CI has
# none: there the CUDA backend runs on the host emulator instead). Run after
# tools/scripts/setup.sh has built build/ with CUDA (nvcc on PATH):
#
#   bash tools/scripts/gpu_check.sh [STEP...]      steps: suites model memcheck bench (default: all)
#
#   suites    ctest's cuda_suite and vulkan_suite: op table bit for bit, KV contract tests,
#             tiny-model tests (hybrid, MoE, Gemma 4)
#   model     the default model on cpu, cuda and vulkan: perplexity and 64 greedy tokens
#             agree ([model][gpu]); prompt lookup gives plain decoding's tokens ([model][spec])
#   memcheck  compute-sanitizer --tool memcheck over the CUDA op, KV and tiny-model tests
#   bench     lockstep bench pp512 / tg128 on cuda and cpu, and cuda with speculation against
#             plain decoding (--spec-vs-plain), with the GPU's name;
#             LLAMA_BENCH=/path/to/llama-bench adds the peer on the same file (build only
#             that target for this GPU's architecture, e.g. cmake -DGGML_CUDA=ON
#             -DCMAKE_CUDA_ARCHITECTURES=90 then --target llama-bench: a full build for
#             every architecture did not finish within a lease)
#
# Steps are separate so that each fits a time-limited session. Every log is kept in
# $GPU_CHECK_OUT (default gpu_check/); the summary says which steps passed. Exits 77 where
# no CUDA device is usable (as cuda_suite does), 1 if a step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD="${LOCKSTEP_BUILD:-build}"
OUT="${GPU_CHECK_OUT:-gpu_check}"
LS="$BUILD/lockstep"
TESTS="$BUILD/tests/lockstep_tests"

steps=("$@")
((${#steps[@]})) || steps=(suites model memcheck bench)
for s in "${steps[@]}"; do
  case "$s" in suites|model|memcheck|bench) ;; *) echo "gpu_check: unknown step '$s' (suites model memcheck bench)" >&2; exit 2 ;; esac
done
for f in "$LS" "$TESTS"; do
  [ -x "$f" ] || { echo "gpu_check: $f is missing: build first (bash tools/scripts/setup.sh)" >&2; exit 1; }
done
devices="$("$LS" devices)"
if ! grep -q '^cuda ' <<<"$devices"; then
  echo "gpu_check: no usable CUDA device, nothing to check here:" >&2
  echo "$devices" >&2
  exit 77
fi
mkdir -p "$OUT"
echo "$devices" | tee "$OUT/devices.txt"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a "$OUT/devices.txt"

summary=()
failed=0
# step NAME LOG CMD...: runs CMD with its output in $OUT/LOG and on the terminal.
step() {
  local name="$1" log="$OUT/$2"
  shift 2
  echo "== $name" >&2
  local t0=$SECONDS
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local verdict="passed"
  ((rc == 0)) || { verdict="FAILED (exit $rc)"; failed=1; }
  summary+=("$name: $verdict, $((SECONDS - t0)) s, log $log")
}

has_vulkan_gpu() { grep -E '^vulkan ' <<<"$devices" | grep -qv llvmpipe; }

for s in "${steps[@]}"; do
  case "$s" in
    suites)
      step "cuda_suite" cuda_suite.log ctest --test-dir "$BUILD" -R '^cuda_suite$' --output-on-failure
      if has_vulkan_gpu; then
        step "vulkan_suite" vulkan_suite.log ctest --test-dir "$BUILD" -R '^vulkan_suite' --output-on-failure
      else
        summary+=("vulkan_suite: not run (no Vulkan GPU listed; see the device README for the loader)")
      fi
      ;;
    model)
      backends=cuda
      has_vulkan_gpu && backends=cuda,vulkan
      step "default model, cpu vs $backends" model.log env LOCKSTEP_TEST_BACKENDS="$backends" "$TESTS" --warn NoTests '[model][gpu],[model][spec]'
      ;;
    memcheck)
      if command -v compute-sanitizer >/dev/null; then
        # --report-api-errors no: a kept executable graph whose topology changed fails
        # cudaGraphExecUpdate by design, and the backend instantiates it anew (cuda_backend.cpp);
        # memcheck would count each such refusal as an error.
        step "compute-sanitizer memcheck" memcheck.log compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 \
          env LOCKSTEP_TEST_BACKENDS=cuda LOCKSTEP_REQUIRE_DEVICE=cuda "$TESTS" --warn NoTests '[ops],[kv]~[model],[tiny]~[model],[families],[hybrid],[gemma4],[spec]~[model]~[server]'
      else
        summary+=("compute-sanitizer memcheck: not run (compute-sanitizer not on PATH)")
        failed=1
      fi
      ;;
    bench)
      step "bench cuda" bench_cuda.log "$LS" bench --backend cuda -p 512 -n 128 -r 3
      step "bench cuda, speculation" bench_cuda_spec.log "$LS" bench --backend cuda -p 0 -n 0 --spec-vs-plain 128 -r 3
      step "bench cpu" bench_cpu.log "$LS" bench --backend cpu -p 512 -n 128 -r 3
      if [ -n "${LLAMA_BENCH:-}" ]; then
        model="${LOCKSTEP_MODEL:-${LOCKSTEP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep}/gemma-3-270m-q4_k_m.gguf}"
        step "peer llama-bench" bench_peer.log "$LLAMA_BENCH" -m "$model" -p 512 -n 128 -r 3 -ngl 99
      fi
      ;;
  esac
done

echo "== summary" >&2
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
exit "$failed"
