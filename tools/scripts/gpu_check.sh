#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one command, for a machine that has one (CI has
# none: there the CUDA backend runs on the host emulator instead). Run after
# tools/scripts/setup.sh has built build/ with CUDA (nvcc on PATH), or with LOCKSTEP_BUILD
# naming a folder that holds lockstep, lockstep-make-test-model and tests/lockstep_tests
# (binaries built elsewhere and carried over):
#
#   bash tools/scripts/gpu_check.sh [STEP...]      (default: suites model memcheck bench)
#
#   bits      the short check of a lease's first minute: the op table's attention and matmul
#             cases on cuda (the attention through the tiles and through the per-query kernels)
#             and the KV contract tests (ring wraps, several sequences)
#   suites    the cuda_suite of tests/CMakeLists.txt (its tags read from there), and the
#             same with Vulkan where a Vulkan GPU is listed: op table bit for bit, KV
#             contract tests, tiny-model tests (hybrid, MoE, Gemma 4, the families)
#   model     the default model on cpu, cuda and vulkan: perplexity and 64 greedy tokens
#             agree ([model][gpu]); prompt lookup gives plain decoding's tokens ([model][spec]);
#             LOCKSTEP_MODEL names another file (a shapes file, where the default model
#             cannot travel)
#   memcheck  compute-sanitizer --tool memcheck over the CUDA op, KV and tiny-model tests
#             (MEMCHECK_TAGS: other Catch tags, for a shorter lease)
#   bench     lockstep bench pp512 / tg128 on cuda and cpu, and cuda with speculation against
#             plain decoding (--spec-vs-plain), with the GPU's name
#   shapes    random-weight files of real models' shapes and Q4_K_M types, written here into
#             $GPU_SHAPES (default /tmp/lockstep-shapes): gemma3-270m (the default model's),
#             llama3.2-1b, gemma3-1b, qwen3-8b (lockstep-make-test-model --shape)
#   profile   per shapes file (GPU_PROFILE_SHAPES names fewer): the host/GPU split of a step
#             (LOCKSTEP_CUDA_VERBOSE: capture,
#             graph update, launch, GPU time) and each kernel's GPU time by op and shapes
#             (LOCKSTEP_PROFILE), for a prompt step, decode steps and decode at depth 4096; and
#             pp512 and tg32 at depths 0 and 4096 with the attention tiles and without
#             (LOCKSTEP_CUDA_ATTN_TILES=0: the per-query kernels; GPU_PROFILE_TILES=0 leaves
#             that part out); with a Vulkan GPU, the same split of a Vulkan step
#             (LOCKSTEP_VK_VERBOSE: host record, submit to fence, GPU time by timestamps, the
#             copies between steps, dispatches and barriers) and each dispatch's GPU time
#   ab        per shapes file (GPU_AB_SHAPES, default gemma3-270m qwen3-8b): the host/GPU split
#             of a decode step and its kernel count, fused and not (LOCKSTEP_CUDA_VERBOSE), then
#             decode with the fused launches and
#             split matvecs, without fusion (LOCKSTEP_CUDA_FUSE=0), without the split (a warp
#             per weight row: LOCKSTEP_CUDA_SPLIT=0) and with both again, -p 0 -n 128 -r 3 each;
#             with a Vulkan GPU, Vulkan decode with the subgroup kernels, without
#             (LOCKSTEP_VK_SUBGROUP=0), and without the fused groups (LOCKSTEP_VK_FUSE=0)
#   compare   lockstep against llama.cpp's llama-bench on the shapes files (GPU_COMPARE_MODELS:
#             shape names, each optionally @D1:D2 for its own depths), alternating
#             (tools/scripts/gpu_compare.py): pp512, tg128, tg128 at depths 4096 and 16384;
#             LLAMA_BENCH names a llama-bench built for this GPU's architecture with CUDA,
#             LLAMA_BENCH_VK one built with Vulkan (lockstep's vulkan backend against it);
#             without them, lockstep's figures alone
#   serve     8 concurrent streams through lockstep serve --backend cuda against
#             LLAMA_SERVER -ngl 99 (tools/scripts/server_bench.py) on the 1B shape
#   ngl       a model bigger than the default split between the CPU and the GPU (issue 31): the
#             qwen3-8b shape (GPU_NGL_SHAPE) at -ngl 0, half and all (--device cuda0), pp512 and
#             tg128, alternating with llama-bench -ngl at the same splits where LLAMA_BENCH names
#             one; then the placement tests on cuda (every split bit for bit)
#   images    issue 37's GPU figure: a Qwen3-VL-4B-shaped text model and projector (written
#             into $GPU_SHAPES once: lockstep-make-test-model --shape qwen3vl-4b --mmproj), one
#             image at 256 tokens (--image-min-tokens), time to first token with lockstep
#             --backend cuda, alternating with LLAMA_MTMD (a llama-mtmd-cli built for this GPU,
#             -ngl 99) where it names one; GPU_IMAGE_ROUNDS rounds (default 2)
#
# Steps are separate so that each fits a time-limited session. Every log is kept in
# $GPU_CHECK_OUT (default gpu_check/); the summary says which steps passed. Exits 77 where
# no CUDA device is usable (as cuda_suite does), 1 if a step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD="${LOCKSTEP_BUILD:-build}"
OUT="${GPU_CHECK_OUT:-gpu_check}"
SHAPES="${GPU_SHAPES:-/tmp/lockstep-shapes}"
LS="$BUILD/lockstep"
MAKE_MODEL="$BUILD/lockstep-make-test-model"
TESTS="$BUILD/tests/lockstep_tests"
export LOCKSTEP_SOURCE_DIR="$PWD"

steps=("$@")
((${#steps[@]})) || steps=(suites model memcheck bench)
for s in "${steps[@]}"; do
  case "$s" in bits|suites|model|memcheck|bench|shapes|profile|ab|compare|serve|ngl|images) ;;
    *) echo "gpu_check: unknown step '$s' (bits suites model memcheck bench shapes profile ab compare serve ngl images)" >&2; exit 2 ;;
  esac
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

# GPU_CHECK_VULKAN=0 leaves the Vulkan suite and comparison out (a shorter lease).
has_vulkan_gpu() { [ "${GPU_CHECK_VULKAN:-1}" != 0 ] && grep -E '^vulkan ' <<<"$devices" | grep -qv llvmpipe; }

# The cuda_suite's tags, from its one definition in tests/CMakeLists.txt.
suite_tags="$(sed -n 's/.*add_test(NAME cuda_suite COMMAND lockstep_tests --warn NoTests "\(.*\)").*/\1/p' tests/CMakeLists.txt)"
[ -n "$suite_tags" ] || { echo "gpu_check: no cuda_suite in tests/CMakeLists.txt" >&2; exit 1; }
shape_names=(gemma3-270m llama3.2-1b gemma3-1b qwen3-8b)
shape_file() { echo "$SHAPES/$1.gguf"; }

for s in "${steps[@]}"; do
  case "$s" in
    bits)
      cu=(env LOCKSTEP_TEST_BACKENDS=cuda LOCKSTEP_REQUIRE_DEVICE=cuda)
      step "cuda op table: attention and matmul" bits_ops.log "${cu[@]}" LOCKSTEP_OP_KINDS=attention,mul_mat,mul_mat_id \
        "$TESTS" --warn NoTests 'every op matches the reference on every backend'
      step "cuda op table: attention, per-query kernels" bits_attn_per_query.log "${cu[@]}" LOCKSTEP_OP_KINDS=attention \
        LOCKSTEP_CUDA_ATTN_TILES=0 "$TESTS" --warn NoTests 'every op matches the reference on every backend'
      step "cuda KV contract" bits_kv.log "${cu[@]}" "$TESTS" --warn NoTests \
        'kv: every backend agrees with the reference on the tiny model,kv: several sequences of different lengths*,ring: attention over a wrapped cache*'
      ;;
    suites)
      # The oracle's golden logits are the default model's: with LOCKSTEP_MODEL naming a shapes
      # file (random weights) that test can only fail, so it is left out, saying so.
      tags="$suite_tags"
      if [ -n "${LOCKSTEP_MODEL:-}" ]; then
        tags="${suite_tags/,\[oracle\]/}"
        summary+=("cuda_suite: [oracle] left out (LOCKSTEP_MODEL names $LOCKSTEP_MODEL, not the model its golden logits are of)")
      fi
      step "cuda_suite" cuda_suite.log env LOCKSTEP_TEST_BACKENDS=cuda LOCKSTEP_REQUIRE_DEVICE=cuda "$TESTS" --warn NoTests "$tags"
      # The per-query attention kernels (the tiles' fallback for wide heads) on every op-table case.
      step "cuda attention, per-query kernels" cuda_attn_per_query.log env LOCKSTEP_TEST_BACKENDS=cuda LOCKSTEP_REQUIRE_DEVICE=cuda \
        LOCKSTEP_CUDA_ATTN_TILES=0 LOCKSTEP_OP_KINDS=attention "$TESTS" --warn NoTests 'every op matches the reference on every backend'
      if has_vulkan_gpu; then
        # The Vulkan parts of tests/CMakeLists.txt together are the cuda_suite less [oracle].
        step "vulkan_suite" vulkan_suite.log env LOCKSTEP_TEST_BACKENDS=vulkan LOCKSTEP_REQUIRE_DEVICE=vulkan "$TESTS" --warn NoTests "${suite_tags/,\[oracle\]/}"
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
          env LOCKSTEP_TEST_BACKENDS=cuda LOCKSTEP_REQUIRE_DEVICE=cuda "$TESTS" --warn NoTests \
          "${MEMCHECK_TAGS:-[ops],[kv]~[model],[tiny]~[model],[families],[hybrid],[gemma4],[spec]~[model]~[server]}"
      else
        summary+=("compute-sanitizer memcheck: not run (compute-sanitizer not on PATH)")
        failed=1
      fi
      ;;
    bench)
      step "bench cuda" bench_cuda.log "$LS" bench --backend cuda -p 512 -n 128 -r 3
      step "bench cuda, speculation" bench_cuda_spec.log "$LS" bench --backend cuda -p 0 -n 0 --spec-vs-plain 128 -r 3
      step "bench cpu" bench_cpu.log "$LS" bench --backend cpu -p 512 -n 128 -r 3
      ;;
    shapes)
      mkdir -p "$SHAPES"
      for n in "${shape_names[@]}"; do
        [ -s "$(shape_file "$n")" ] && continue
        step "shape $n" "shape_$n.log" "$MAKE_MODEL" --shape "$n" --out "$(shape_file "$n")"
      done
      ;;
    profile)
      for n in ${GPU_PROFILE_SHAPES:-${shape_names[@]}}; do
        f="$(shape_file "$n")"
        [ -s "$f" ] || { summary+=("profile $n: no $f (run the shapes step first)"); failed=1; continue; }
        step "split $n" "split_$n.log" env LOCKSTEP_CUDA_VERBOSE=1 "$LS" bench --backend cuda -m "$f" -p 512 -n 128 -r 2
        step "profile $n" "profile_$n.log" env LOCKSTEP_PROFILE=1 "$LS" bench --backend cuda -m "$f" -p 512 -n 32 -r 1
        step "profile $n @ d4096" "profile_${n}_d4096.log" env LOCKSTEP_PROFILE=1 "$LS" bench --backend cuda -m "$f" -p 0 -n 16 -d 4096 -r 1 -c 4608
        if has_vulkan_gpu; then
          # Vulkan: host record, submit-to-fence and GPU time (timestamps) a graph, the copies
          # between graphs and the dispatch/barrier counts; then GPU time per dispatch.
          step "vulkan split $n" "vk_split_$n.log" env LOCKSTEP_VK_VERBOSE=1 "$LS" bench --backend vulkan -m "$f" -p 512 -n 128 -r 2
          step "vulkan profile $n" "vk_profile_$n.log" env LOCKSTEP_PROFILE=1 "$LS" bench --backend vulkan -m "$f" -p 512 -n 32 -r 1
        fi
        # The attention tiles against the per-query kernels (LOCKSTEP_CUDA_ATTN_TILES=0): prompt
        # and decode at depths 0 and 4096.
        [ "${GPU_PROFILE_TILES:-1}" = 0 ] && continue
        step "attention tiles $n" "tiles_$n.log" sh -c "\"$LS\" bench --backend cuda -m \"$f\" -p 512 -n 32 -d 0,4096 -r 2 -c 4608 &&
          LOCKSTEP_CUDA_ATTN_TILES=0 \"$LS\" bench --backend cuda -m \"$f\" -p 512 -n 32 -d 0,4096 -r 2 -c 4608"
      done
      ;;
    ab)
      for n in ${GPU_AB_SHAPES:-gemma3-270m qwen3-8b}; do
        f="$(shape_file "$n")"
        [ -s "$f" ] || { summary+=("ab $n: no $f (run the shapes step first)"); failed=1; continue; }
        step "split $n" "ab_split_$n.log" env LOCKSTEP_CUDA_VERBOSE=1 "$LS" bench --backend cuda -m "$f" -p 512 -n 128 -r 2
        step "fused $n" "ab_fused_$n.log" "$LS" bench --backend cuda -m "$f" -p 0 -n 128 -r 3
        step "unfused $n" "ab_unfused_$n.log" env LOCKSTEP_CUDA_FUSE=0 "$LS" bench --backend cuda -m "$f" -p 0 -n 128 -r 3
        # The kernels of an unfused decode step (the split step above prints the fused count).
        step "unfused kernels $n" "ab_unfused_kernels_$n.log" env LOCKSTEP_CUDA_FUSE=0 LOCKSTEP_CUDA_VERBOSE=1 "$LS" bench --backend cuda -m "$f" -p 0 -n 4 -r 1
        step "unsplit $n" "ab_unsplit_$n.log" env LOCKSTEP_CUDA_SPLIT=0 "$LS" bench --backend cuda -m "$f" -p 0 -n 128 -r 3
        step "fused again $n" "ab_fused2_$n.log" "$LS" bench --backend cuda -m "$f" -p 0 -n 128 -r 3
        if has_vulkan_gpu; then  # Vulkan decode: subgroup kernels (K-quants too) against the plain path, fused groups against none
          step "vulkan subgroup $n" "ab_vk_sg_$n.log" "$LS" bench --backend vulkan -m "$f" -p 0 -n 128 -r 3
          step "vulkan plain $n" "ab_vk_plain_$n.log" env LOCKSTEP_VK_SUBGROUP=0 "$LS" bench --backend vulkan -m "$f" -p 0 -n 128 -r 3
          step "vulkan unfused $n" "ab_vk_unfused_$n.log" env LOCKSTEP_VK_FUSE=0 "$LS" bench --backend vulkan -m "$f" -p 0 -n 128 -r 3
        fi
      done
      ;;
    compare)
      # GPU_COMPARE_MODELS: shape names, each optionally @D1:D2 (its depths; default 4096 and 16384).
      models=""
      for m in ${GPU_COMPARE_MODELS:-gemma3-270m llama3.2-1b qwen3-8b}; do
        models+="${models:+,}$(shape_file "${m%%@*}")${m#"${m%%@*}"}"
      done
      step "compare cuda" compare_cuda.log python3 tools/scripts/gpu_compare.py --lockstep "$LS" --backend cuda \
        --peer "${LLAMA_BENCH:-}" --models "$models" --rounds "${GPU_COMPARE_ROUNDS:-2}" --log "$OUT/compare_cuda_runs.log" --out "$OUT/compare_cuda.md"
      if has_vulkan_gpu; then
        step "compare vulkan" compare_vulkan.log python3 tools/scripts/gpu_compare.py --lockstep "$LS" --backend vulkan \
          --peer "${LLAMA_BENCH_VK:-}" --models "$models" --rounds "${GPU_COMPARE_ROUNDS:-2}" --log "$OUT/compare_vulkan_runs.log" --out "$OUT/compare_vulkan.md"
      fi
      ;;
    serve)
      if [ -n "${LLAMA_SERVER:-}" ]; then
        step "serve 8 streams" serve.log python3 tools/scripts/server_bench.py --lockstep "$LS" --llama-server "$LLAMA_SERVER" \
          --model "$(shape_file llama3.2-1b)" --backend cuda --gpu-layers 99 --only 8 --rounds 2 --tokens 128
      else
        summary+=("serve: not run (LLAMA_SERVER names no llama-server)")
      fi
      ;;
    ngl)
      f="$(shape_file "${GPU_NGL_SHAPE:-qwen3-8b}")"
      if [ ! -s "$f" ]; then
        summary+=("ngl: no $f (run the shapes step first)"); failed=1
      else
        n_layer="$("$LS" info -m "$f" 2>/dev/null | sed -nE 's/^arch: +[^:]+: ([0-9]+) layers.*/\1/p')"
        # GPU_NGL_SPLITS (default "0 half all"), GPU_NGL_ROUNDS (2) and GPU_NGL_ARGS (the bench's
        # tests) shorten the step for a short lease.
        for round in $(seq "${GPU_NGL_ROUNDS:-2}"); do
          for ngl in ${GPU_NGL_SPLITS:-0 half all}; do
            [ "$ngl" = half ] && ngl=$((n_layer / 2))
            # shellcheck disable=SC2086
            step "ngl $ngl, round $round" "ngl_${ngl}_$round.log" "$LS" bench --device cuda0 -ngl "$ngl" -m "$f" ${GPU_NGL_ARGS:--p 512 -n 128 -r 2}
            if [ -n "${LLAMA_BENCH:-}" ]; then
              # shellcheck disable=SC2086
              step "llama-bench ngl $ngl, round $round" "ngl_peer_${ngl}_$round.log" "$LLAMA_BENCH" -m "$f" -ngl "${ngl/all/99}" ${GPU_NGL_ARGS:--p 512 -n 128 -r 2} -fa 1
            fi
          done
        done
      fi
      step "placement tests on cuda" placement_cuda.log env LOCKSTEP_TEST_BACKENDS=cuda LOCKSTEP_REQUIRE_DEVICE=cuda "$TESTS" --warn NoTests '[placement]'
      ;;
    images)
      tf="$(shape_file qwen3vl-4b)" pf="$SHAPES/qwen3vl-4b-mmproj.gguf" img=tests/data/vision/photo120x90.jpg
      if [ ! -s "$tf" ] || [ ! -s "$pf" ]; then
        mkdir -p "$SHAPES"
        step "shape qwen3vl-4b and its projector" shape_qwen3vl-4b.log "$MAKE_MODEL" --shape qwen3vl-4b --out "$tf" --mmproj "$pf"
      fi
      for round in $(seq "${GPU_IMAGE_ROUNDS:-2}"); do
        step "image, lockstep cuda, round $round" "images_lockstep_$round.log" "$LS" run --backend cuda -m "$tf" --mmproj "$pf" \
          --image "$img" --image-min-tokens 256 -p "Describe." -n 4 --temp 0
        summary+=("  $(grep -E '^images: ' "$OUT/images_lockstep_$round.log" | head -1)")
        if [ -n "${LLAMA_MTMD:-}" ]; then
          step "image, llama-mtmd-cli, round $round" "images_peer_$round.log" "$LLAMA_MTMD" -m "$tf" --mmproj "$pf" --image "$img" \
            --image-min-tokens 256 -p "Describe." -n 4 --temp 0 -ngl 99 --chat-template chatml --no-warmup -c 4096 -lv 4
          summary+=("  llama.cpp: $(grep -oE 'mtmd batch encoding done in [0-9]+ ms|prompt eval time = +[0-9.]+ ms' "$OUT/images_peer_$round.log" | tr '\n' ' ')")
        fi
      done
      ;;
  esac
done

echo "== summary" >&2
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
exit "$failed"
