#!/usr/bin/env bash
# The README's first commands on the default model (no -m: the path fetch_model.sh fills),
# kept tiny for CI: each must exit 0 and print what it is for, not merely not crash.
# Usage: cli_smoke.sh LOCKSTEP_BINARY SOURCE_DIR
set -u
bin="$1"; src="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fails=0; passes=0
fail() { echo "FAIL: $1"; shift; for f in "$@"; do echo "--- $f:"; head -20 "$f"; done; fails=$((fails + 1)); }

# run: the prompt echoed, then 8 generated tokens; greedy, so a second run prints the same.
prompt="The history of the printing press"
if ! "$bin" run -p "$prompt" -n 8 --temp 0 -t 2 >"$tmp/run1.out" 2>"$tmp/run1.err"; then
  fail "run exited non-zero" "$tmp/run1.out" "$tmp/run1.err"
elif [ "$(head -c ${#prompt} "$tmp/run1.out")" != "$prompt" ]; then
  fail "run did not print the prompt first" "$tmp/run1.out"
elif [ "$(tr -d '[:space:]' <"$tmp/run1.out" | wc -c)" -le "$(tr -d '[:space:]' <<<"$prompt" | wc -c)" ]; then
  fail "run printed no generated text after the prompt" "$tmp/run1.out"
elif ! grep -qE "generation: 8 tokens" "$tmp/run1.err"; then
  fail "run did not report 8 generated tokens" "$tmp/run1.err"
elif ! "$bin" run -p "$prompt" -n 8 --temp 0 -t 2 >"$tmp/run2.out" 2>/dev/null || ! cmp -s "$tmp/run1.out" "$tmp/run2.out"; then
  fail "a second greedy run printed something else" "$tmp/run1.out" "$tmp/run2.out"
else
  passes=$((passes + 1))
fi

# perplexity: two chunks of 128 tokens, each reported, then a finite estimate in a sane range
# (an untrained or broken model scores in the tens of thousands; NaN or inf is a bug).
if ! "$bin" perplexity -f "$src/tests/data/GPL-3.txt" -c 128 --chunks 2 -t 2 >"$tmp/ppl.out" 2>"$tmp/ppl.err"; then
  fail "perplexity exited non-zero" "$tmp/ppl.out" "$tmp/ppl.err"
else
  ppl="$(sed -nE 's/^Final estimate: PPL = ([0-9.]+) \+\/- [0-9.]+$/\1/p' "$tmp/ppl.out")"
  if ! grep -qE '^\[1/2\] [0-9.]+' "$tmp/ppl.out" || ! grep -qE '^\[2/2\] [0-9.]+' "$tmp/ppl.out"; then
    fail "perplexity did not report both chunks" "$tmp/ppl.out"
  elif [ -z "$ppl" ] || ! awk -v p="$ppl" 'BEGIN { exit !(p > 1 && p < 1000) }'; then
    fail "perplexity estimate '$ppl' missing or outside (1, 1000)" "$tmp/ppl.out"
  else
    passes=$((passes + 1))
  fi
fi

# bench: one row per test (pp16, tg4) with a positive speed.
if ! "$bin" bench -p 16 -n 4 -r 1 -t 2 >"$tmp/bench.out" 2>"$tmp/bench.err"; then
  fail "bench exited non-zero" "$tmp/bench.out" "$tmp/bench.err"
elif ! grep -qE '\| pp16 \| [0-9]*[1-9][0-9]*\.[0-9]+ ' "$tmp/bench.out" || ! grep -qE '\| tg4 \| [0-9]*[1-9][0-9]*\.[0-9]+ ' "$tmp/bench.out"; then
  fail "bench did not print pp16 and tg4 rows with a speed" "$tmp/bench.out"
else
  passes=$((passes + 1))
fi

# bench -d: generation timed after a 16-token context, in llama-bench's row name, and no pp
# row for -p 0; the peers script (shared/tools/peers.sh) reads the row with `awk '$0 ~ "tg4"'`.
if ! "$bin" bench -p 0 -n 4 -d 16 -r 1 -t 2 >"$tmp/depth.out" 2>"$tmp/depth.err"; then
  fail "bench -d exited non-zero" "$tmp/depth.out" "$tmp/depth.err"
elif ! grep -qE '\| tg4 @ d16 \| [0-9]*[1-9][0-9]*\.[0-9]+ ' "$tmp/depth.out" || grep -qE '\| pp' "$tmp/depth.out"; then
  fail "bench -p 0 -n 4 -d 16 did not print exactly a 'tg4 @ d16' row with a speed" "$tmp/depth.out"
else
  passes=$((passes + 1))
fi

# info: the default model's architecture as the file declares it.
if ! "$bin" info >"$tmp/info.out" 2>"$tmp/info.err"; then
  fail "info exited non-zero" "$tmp/info.out" "$tmp/info.err"
elif ! grep -qE '^arch: +gemma3: 18 layers, n_embd 640, .*vocab 262144' "$tmp/info.out" || ! grep -qE '^file: .*\(GGUF v3' "$tmp/info.out"; then
  fail "info did not describe the default model" "$tmp/info.out"
else
  passes=$((passes + 1))
fi

echo "cli smoke: $passes passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$passes" -eq 5 ]
