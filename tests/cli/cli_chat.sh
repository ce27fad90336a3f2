#!/usr/bin/env bash
# `lockstep chat` keeps the conversation in the KV cache: on the tiny Gemma 4 model with rings
# far shorter than a reply (window 8, -ub 4: 12 rows), every turn after the first reuses all
# the tokens evaluated so far and evaluates only the new ones. Usage: cli_chat.sh BIN SOURCE_DIR
set -u
bin="$1"; src="$2"
out="$(printf 'hi there\nthe answer\nagain\n' | LOCKSTEP_CHAT_STATS=1 "$bin" chat -m "$src/tests/data/gemma4_tiny.gguf" \
       -n 8 --temp 0 -c 128 -ub 4 2>&1)" || { echo "FAIL: chat exited non-zero"; echo "$out"; exit 1; }
stats="$(sed -nE 's/^\[turn: ([0-9]+) prompt tokens reused, ([0-9]+) evaluated, ([0-9]+) generated\]$/\1 \2 \3/p' <<<"$out")"
[ "$(wc -l <<<"$stats")" -eq 3 ] || { echo "FAIL: expected 3 turns:"; echo "$out"; exit 1; }
# Turn k+1 reuses turn k's prompt and its generated tokens (all but the last when -n ended the
# reply: that one is never evaluated).
prev_total=0; n=0
while read -r reused evaluated generated; do
  if [ "$n" -gt 0 ] && [ "$reused" -ne "$((prev_total - 1))" ] && [ "$reused" -ne "$prev_total" ]; then
    echo "FAIL: turn $((n + 1)) reused $reused tokens, want $((prev_total - 1)) or $prev_total"; echo "$out"; exit 1
  fi
  prev_total=$((reused + evaluated + generated)); n=$((n + 1))
done <<<"$stats"
echo "chat: $n turns, each later turn reused the whole cached conversation"
