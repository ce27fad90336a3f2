#!/usr/bin/env bash
# A GPU lease of this workplace's device tool in few calls: 15 minutes of device time a
# session, each start a minute of it, 64 MiB carried beside the tree, and a machine that stays
# warm 30 s after a call (what a call leaves in /tmp is there for the next one). Everything is
# built here beforehand; the lease only unpacks and measures.
#
# Here, before the lease:
#   bash tools/scripts/gpu_lease.sh pack [BUILD]
#       lockstep, lockstep-make-test-model and tests/lockstep_tests of BUILD (default build/),
#       stripped, with the shared libraries they link that a bare GPU machine lacks (TBB,
#       cpp-httplib, Open MPI, ...), into gpu_check/carry2/ls.tar.xz (about 12 MB)
#   A peer's prebuilt binaries (llama-bench, llama-server, llama-mtmd-cli for the images step,
#   and their libraries, built beside the
#   project and never committed) go as xz tarballs: its CUDA library alone (37.6 MB at xz -9e)
#   to gpu_check/carry/peer.tar.xz, the rest (4 MB) to gpu_check/carry2/peer_rest.tar.xz.
#   The CUDA library does not fit beside the tree (28 MB) and lockstep's tarball in one call,
#   so one call carries gpu_check/carry and runs `peer`, and the next, on the machine still
#   warm, carries gpu_check/carry2 and runs the rest (its `ls` step unpacks both there).
#
# On the GPU machine (the device tool's command, in the repository root):
#   bash tools/scripts/gpu_lease.sh STEP...
#       peer   unpack gpu_check/carry/peer.tar.xz into /tmp/lease-peer (LLAMA_BENCH for the
#              compare and ngl steps, found there by later calls too)
#       ls     unpack gpu_check/carry2/ls.tar.xz into /tmp/lease-build (LOCKSTEP_BUILD)
#       gl     the Vulkan loader from .gl/*.deb (the device README's recipe) and NVIDIA's ICD,
#              so that lockstep's vulkan backend sees the GPU
#       any other step is gpu_check.sh's (bits, shapes, suites, memcheck, profile, compare,
#       ngl, ...), run with the unpacked binaries; the shapes stay in /tmp/lockstep-shapes
#   The logs go to $OUT (the device tool's folder that comes back), packed as one lease.tgz.
#
# One lease, as run for issue 36 on 2026-11-28 (device seconds: a start about 35, peer 2, the
# rest 110-270 a call; each call's tree and carry are sent again):
#   call 1, carrying gpu_check/carry:          bash tools/scripts/gpu_lease.sh peer
#   call 2 at once (the machine goes back 30 s after a call), carrying gpu_check/carry2, with
#   GPU_CHECK_VULKAN=0 GPU_COMPARE_ROUNDS=2 LOCKSTEP_MODEL=/tmp/lockstep-shapes/gemma3-270m.gguf
#   GPU_COMPARE_MODELS='gemma3-270m llama3.2-1b@4096 qwen3-8b@4096' GPU_NGL_SPLITS='half all'
#   GPU_NGL_ROUNDS=1 GPU_PROFILE_SHAPES=qwen3-8b GPU_PROFILE_TILES=0 MEMCHECK_TAGS='[kv]~[model],[gemma4]':
#                 bash tools/scripts/gpu_lease.sh ls bits shapes ngl compare suites profile memcheck
#   (268 s); then, still warm, `ab` and `serve` (the fused pairs' A/B, 8 streams against
#   llama-server), and with .gl carried, the Vulkan figures.
# The next lease (changes written 2026-11-29 without a GPU: split decode matvecs, norms that
# read ahead, the norm + quantizer pair) should time them first: `ls bits shapes ab compare`
# (ab: fused / unfused / unsplit decode on the 270M and 8B shapes, and Vulkan decode with and
# without the subgroup kernels, K-quants and MoE included since the second 2026-11-29 session,
# where the card has a Vulkan driver), then `suites profile`.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=/tmp/lease-build P=/tmp/lease-peer
OUTDIR="${OUT:-gpu_check}"

if [ "${1:-}" = pack ]; then
  build="${2:-build}" stage="$(mktemp -d)"
  mkdir -p "$stage/tests" "$stage/lib" gpu_check/carry2
  cp "$build/lockstep" "$build/lockstep-make-test-model" "$stage/" || exit 1
  cp "$build/tests/lockstep_tests" "$stage/tests/" || exit 1
  strip --strip-unneeded "$stage/lockstep" "$stage/lockstep-make-test-model" "$stage/tests/lockstep_tests"
  # The linked libraries but the C and C++ runtimes and the driver (the GPU machine has those).
  for b in "$stage/lockstep" "$stage/tests/lockstep_tests"; do ldd "$b" | awk '/=>/ {print $3}'; done | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libcuda)\.so|ld-linux' |
    while read -r l; do cp -L "$l" "$stage/lib/"; done
  tar -C "$stage" -cf - . | xz -T0 -6 >gpu_check/carry2/ls.tar.xz
  rm -rf "$stage"
  ls -l gpu_check/carry2/ls.tar.xz
  exit 0
fi

mkdir -p "$B" "$P" "$OUTDIR/lease"
export LOCKSTEP_BUILD=$B GPU_CHECK_OUT="$OUTDIR/lease" LD_LIBRARY_PATH="$P:$B/lib:${LD_LIBRARY_PATH:-}"
[ -x "$P/llama-bench" ] && export LLAMA_BENCH="${LLAMA_BENCH:-$P/llama-bench}"
[ -x "$P/llama-server" ] && export LLAMA_SERVER="${LLAMA_SERVER:-$P/llama-server}"
[ -x "$P/llama-mtmd-cli" ] && export LLAMA_MTMD="${LLAMA_MTMD:-$P/llama-mtmd-cli}"
t0=$SECONDS
rc=0
for s in "$@"; do
  echo "== $s at $((SECONDS - t0)) s"
  case "$s" in
    peer) tar -xJf gpu_check/carry/peer.tar.xz -C "$P" || rc=1 ;;
    ls)
      tar -xJf gpu_check/carry2/ls.tar.xz -C "$B" || rc=1
      # The peer's smaller part, where its CUDA library alone filled the first call's carry.
      if [ -f gpu_check/carry2/peer_rest.tar.xz ]; then
        tar -xJf gpu_check/carry2/peer_rest.tar.xz -C "$P" || rc=1
        [ -x "$P/llama-bench" ] && export LLAMA_BENCH="${LLAMA_BENCH:-$P/llama-bench}"
        [ -x "$P/llama-server" ] && export LLAMA_SERVER="${LLAMA_SERVER:-$P/llama-server}"
        ldd "$P/llama-bench" | grep 'not found' && rc=1
      fi
      command -v nvidia-smi >/dev/null &&
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUTDIR/lease/gpu.txt"
      ;;
    gl)
      for f in .gl/*.deb; do dpkg -x "$f" /; done
      ldconfig
      icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
      [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
      "$B/lockstep" devices
      ;;
    *)
      [ -z "${LLAMA_BENCH:-}" ] && [ -x "$P/llama-bench" ] && export LLAMA_BENCH="$P/llama-bench"
      [ -z "${LLAMA_SERVER:-}" ] && [ -x "$P/llama-server" ] && export LLAMA_SERVER="$P/llama-server"
      [ -z "${LLAMA_MTMD:-}" ] && [ -x "$P/llama-mtmd-cli" ] && export LLAMA_MTMD="$P/llama-mtmd-cli"
      bash tools/scripts/gpu_check.sh "$s" || rc=1
      ;;
  esac
done
echo "== done at $((SECONDS - t0)) s"
[ -n "${OUT:-}" ] && (cd "$OUT" && tar -czf lease.tgz lease && rm -rf lease)
exit "$rc"
