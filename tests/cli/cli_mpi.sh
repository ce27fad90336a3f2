#!/usr/bin/env bash
# Pipeline stages over Open MPI (issue 31): `mpirun -np 2` and `-np 3` on this machine give one
# process's bits: 32 greedy tokens of run (prompt-lookup speculation on), perplexity's every
# log-probability (--kl-divergence-base files compared byte for byte), a chat of three turns with
# prefix reuse; one rank on lavapipe among CPU ranks; a rank killed mid-generation ends the job
# within seconds naming it; a rank with another model file is refused.
# Usage: cli_mpi.sh LOCKSTEP_BINARY SOURCE_DIR MAKE_TEST_MODEL_BINARY
set -u
bin="$1"; src="$2"; make_model="$3"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fails=0; passes=0
fail() { echo "FAIL: $1"; shift; for f in "$@"; do echo "--- $f:"; head -30 "$f"; done; fails=$((fails + 1)); }
# Root may start ranks here (CI machines run as root); --oversubscribe: more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI's session directories under this test's own folder: under the shared /tmp, a job of
# another test (CTest runs two at once) or a stale one from an earlier run made orted's mkdir
# fail ("File exists", orte_session_dir failed) and the job with it.
export OMPI_MCA_orte_tmpdir_base="$tmp"
mpi() { local np=$1; shift; timeout 120 mpirun --oversubscribe -np "$np" "$@"; }
# same WHAT ONE GOT ERR PATTERN: a job's output GOT equals one process's ONE, and its messages
# ERR say PATTERN.
same() {
  if ! cmp -s "$2" "$3"; then fail "$1: other output than one process" "$2" "$3"
  elif ! grep -q "$5" "$4"; then fail "$1: no '$5' in its messages" "$4"
  else passes=$((passes + 1)); fi
}
# refused WHAT PATTERN -- MPIRUN_ARGS...: the job fails, and its messages match PATTERN (ERE).
refused() {
  local what=$1 pattern=$2; shift 3
  if mpi "$@" >"$tmp/refused.out" 2>"$tmp/refused.err"; then fail "$what: the job ran" "$tmp/refused.err"
  elif ! grep -qE -- "$pattern" "$tmp/refused.err"; then fail "$what: no message matching '$pattern'" "$tmp/refused.err"
  else passes=$((passes + 1)); fi
}

# The tiny models: Gemma 3 with windows of 8 (rings wrap), Gemma 4 (a layer reads another's
# cache across the cut), the hybrid qwen35 (recurrent state per stage), qwen3moe and gpt-oss.
"$make_model" --out "$tmp/swa.gguf" --window 8 --layers 7 --ctx 2048 >/dev/null
"$make_model" --vocab-for "$src/tests/data/qwen35_tiny.gguf" --out "$tmp/qwen35.gguf" >/dev/null
models=("$tmp/swa.gguf" "$src/tests/data/gemma4_tiny.gguf" "$tmp/qwen35.gguf" "$src/tests/data/qwen3moe_tiny.gguf" "$src/tests/data/gptoss_tiny.gguf")
prompt="Once upon a time, once upon a time, in a land"

for m in "${models[@]}"; do
  name="$(basename "$m" .gguf)"
  "$bin" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -ub 8 >"$tmp/$name.1" 2>"$tmp/$name.1.err" || { fail "$name: one process exited non-zero" "$tmp/$name.1.err"; continue; }
  for np in 2 3; do
    if ! mpi "$np" "$bin" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -ub 8 >"$tmp/$name.$np" 2>"$tmp/$name.$np.err"; then
      fail "$name: mpirun -np $np exited non-zero" "$tmp/$name.$np.err"
    else
      same "$name: mpirun -np $np" "$tmp/$name.1" "$tmp/$name.$np" "$tmp/$name.$np.err" "placement over $np ranks"
    fi
  done
done

# perplexity: every scored token's log-probabilities, byte for byte.
m="$tmp/swa.gguf"
"$bin" perplexity -m "$m" -f "$src/tests/data/GPL-3.txt" -c 64 --chunks 3 -ub 16 --kl-divergence-base "$tmp/ppl.1" >"$tmp/ppl.1.out" 2>&1 \
  || fail "perplexity: one process exited non-zero" "$tmp/ppl.1.out"
if ! mpi 3 "$bin" perplexity -m "$m" -f "$src/tests/data/GPL-3.txt" -c 64 --chunks 3 -ub 16 --kl-divergence-base "$tmp/ppl.3" >"$tmp/ppl.3.out" 2>&1; then
  fail "perplexity: mpirun -np 3 exited non-zero" "$tmp/ppl.3.out"
elif ! cmp -s "$tmp/ppl.1" "$tmp/ppl.3"; then
  fail "perplexity: mpirun -np 3 log-probabilities differ from one process's" "$tmp/ppl.1.out" "$tmp/ppl.3.out"
else
  passes=$((passes + 1))
fi

# The default model, whose logits rows (1 MiB each) go by MPI's rendezvous protocol: a stage
# that waited for its own output send before starting the next ubatch would deadlock here.
"$bin" perplexity -f "$src/tests/data/GPL-3.txt" -c 128 -ub 32 --chunks 2 -t 1 --kl-divergence-base "$tmp/dppl.1" >"$tmp/dppl.1.out" 2>&1 \
  || fail "default model perplexity: one process exited non-zero" "$tmp/dppl.1.out"
if ! mpi 2 "$bin" perplexity -f "$src/tests/data/GPL-3.txt" -c 128 -ub 32 --chunks 2 -t 1 --kl-divergence-base "$tmp/dppl.2" >"$tmp/dppl.2.out" 2>&1; then
  fail "default model perplexity: mpirun -np 2 exited non-zero (or hung)" "$tmp/dppl.2.out"
elif ! cmp -s "$tmp/dppl.1" "$tmp/dppl.2"; then
  fail "default model perplexity: mpirun -np 2 log-probabilities differ from one process's" "$tmp/dppl.2.out"
else
  passes=$((passes + 1))
fi

# chat: three turns, each later one reusing the cached conversation, on two ranks.
printf 'hi there\nthe answer\nagain\n' | "$bin" chat -m "$src/tests/data/gemma4_tiny.gguf" -n 8 --temp 0 -c 128 -ub 4 >"$tmp/chat.1" 2>/dev/null
printf 'hi there\nthe answer\nagain\n' | mpi 2 "$bin" chat -m "$src/tests/data/gemma4_tiny.gguf" -n 8 --temp 0 -c 128 -ub 4 >"$tmp/chat.2" 2>"$tmp/chat.2.err" \
  || fail "chat: mpirun -np 2 exited non-zero" "$tmp/chat.2.err"
if ! cmp -s "$tmp/chat.1" "$tmp/chat.2"; then fail "chat: mpirun -np 2 replied otherwise" "$tmp/chat.1" "$tmp/chat.2"; else passes=$((passes + 1)); fi

# One rank on lavapipe (MPMD: each rank its own --backend).
if "$bin" devices 2>/dev/null | grep -q '^vulkan '; then
  m="$src/tests/data/gemma4_tiny.gguf"
  if ! timeout 300 mpirun --oversubscribe -np 2 "$bin" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -ub 8 : \
       -np 1 "$bin" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -ub 8 --backend vulkan >"$tmp/vk.3" 2>"$tmp/vk.3.err"; then
    fail "a rank on lavapipe: exited non-zero" "$tmp/vk.3.err"
  else
    same "a rank on lavapipe" "$tmp/gemma4_tiny.1" "$tmp/vk.3" "$tmp/vk.3.err" "rank 2 on .*on vulkan"
  fi
fi

# A rank killed mid-generation: the job ends within seconds, and mpirun names the rank.
m="$tmp/swa.gguf"
mpirun --oversubscribe -np 3 "$bin" run -m "$m" -p "$prompt" -n 100000 --temp 0 -c 2048 --spec off >"$tmp/kill.out" 2>"$tmp/kill.err" &
job=$!
victim=""
for _ in $(seq 100); do  # the rank-2 process, once it generates
  for p in $(pgrep -f "$bin run -m $m" || true); do
    grep -qz '^OMPI_COMM_WORLD_RANK=2$' "/proc/$p/environ" 2>/dev/null && victim=$p
  done
  [ -n "$victim" ] && [ -s "$tmp/kill.out" ] && break
  sleep 0.1
done
if [ -z "$victim" ]; then
  fail "kill: found no rank-2 process" "$tmp/kill.err"; kill "$job" 2>/dev/null
else
  sleep 0.5
  kill -9 "$victim"; t0=$SECONDS
  for _ in $(seq 150); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$job" 2>/dev/null; then
    fail "kill: the job still runs 15 s after rank 2 was killed" "$tmp/kill.err"; kill -9 "$job" 2>/dev/null
  elif wait "$job"; then
    fail "kill: the job exited 0 after rank 2 was killed" "$tmp/kill.err"
  elif ! grep -qiE "rank 2 .*(signal 9|killed)" "$tmp/kill.err"; then
    fail "kill: no message naming rank 2 and its end" "$tmp/kill.err"
  else
    echo "kill: the job ended $((SECONDS - t0)) s after rank 2 was killed: $(grep -iE "rank 2 .*(signal 9|killed)" "$tmp/kill.err" | head -1)"
    passes=$((passes + 1))
  fi
fi

# A rank with another model file is refused at start, naming it.
refused "mismatch" "rank 1 on .*: its model file .*llama_tiny.gguf differs from rank 0's" -- \
  1 "$bin" run -m "$src/tests/data/gemma4_tiny.gguf" -p hi -n 4 : -np 1 "$bin" run -m "$src/tests/data/llama_tiny.gguf" -p hi -n 4

# A rank that cannot load its stage (here: a CUDA device this machine lacks) ends the job at
# start, naming the rank, its host and the cause.
if ! nvidia-smi -L >/dev/null 2>&1; then
  refused "load" "rank 1 on [^:]+: .*(no usable NVIDIA GPU|has no cuda backend)" -- \
    1 "$bin" run -m "$src/tests/data/gemma4_tiny.gguf" -p hi -n 4 : -np 1 "$bin" run -m "$src/tests/data/gemma4_tiny.gguf" -p hi -n 4 --backend cuda
fi

# Shares that leave a rank without a layer are refused at load, naming the rank.
refused "-ts 1,0" "rank 1 would hold no layer" -- 2 "$bin" run -m "$src/tests/data/gemma4_tiny.gguf" -p hi -n 4 -ts 1,0

echo "mpi: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
