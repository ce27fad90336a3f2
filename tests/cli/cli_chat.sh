#!/usr/bin/env bash
# `lockstep chat` keeps the conversation in the KV cache: on the tiny Gemma 4 model with rings
# far shorter than a reply (window 8, -ub 4: 12 rows), every turn after the first reuses all
# the tokens evaluated so far and evaluates only the new ones. Usage: cli_chat.sh BIN SOURCE_DIR
set -u
bin="$1"; src="$2"
out="$(printf 'hi there\nthe answer\nagain\n' | LOCKSTEP_CHAT_STATS=1 "$bin" chat -m "$src/tests/data/gemma4_tiny.gguf" \
       -n 8 --temp 0 -c 128 -ub 4 2>&1)" || { echo "FAIL: chat exited non-zero"; echo "$out"; exit 1; }
stats="$(sed -nE 's/^\[turn: ([0-9]+) prompt tokens reused, ([0-9]+) evaluated, ([0-9]+) generated(, [0-9]+ of [0-9]+ guesses accepted)?\]$/\1 \2 \3/p' <<<"$out")"
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

# Each family of issue 20 on its tiny model with its own template (Llama 3 headers, ChatML with
# Qwen 3's empty think block, Gemma turns, gpt-oss harmony): three turns, each later one reusing
# at least the previous turn's prompt less its generation prompt (which these templates render
# differently once the turn is history: Qwen 3 drops the empty think block, harmony the
# analysis channel). Windows of 4 tokens with -ub 16 (rings of 20 rows) keep the roll-back to
# the end of that prompt inside the ring.
for m in llama qwen3 qwen3moe gemma2 gptoss; do
  out="$(printf 'hi there\nthe answer\nagain\n' | LOCKSTEP_CHAT_STATS=1 "$bin" chat -m "$src/tests/data/${m}_tiny.gguf" \
         -n 8 --temp 0 -c 1024 -ub 16 2>&1)" || { echo "FAIL: chat on $m exited non-zero"; echo "$out"; exit 1; }
  stats="$(sed -nE 's/^\[turn: ([0-9]+) prompt tokens reused, ([0-9]+) evaluated, ([0-9]+) generated(, [0-9]+ of [0-9]+ guesses accepted)?\]$/\1 \2 \3/p' <<<"$out")"
  [ "$(wc -l <<<"$stats")" -eq 3 ] || { echo "FAIL: $m: expected 3 turns:"; echo "$out"; exit 1; }
  prev_prompt=0; n=0
  while read -r reused evaluated generated; do
    if [ "$n" -gt 0 ] && [ "$reused" -lt "$((prev_prompt - 8))" ]; then
      echo "FAIL: $m: turn $((n + 1)) reused $reused tokens, want at least $((prev_prompt - 8))"; echo "$out"; exit 1
    fi
    prev_prompt=$((reused + evaluated)); n=$((n + 1))
  done <<<"$stats"
  echo "chat: $m: $n turns with its template, each later turn reusing the cached conversation"
done

# Images (issue 37): /image with --mmproj on the tiny Gemma 3; each image is encoded once, on
# the turn it comes with, and found in the cache on every later turn.
out="$(printf '/image %s\nDescribe.\nAnd the colours?\n/image /nonexistent.png\n/image %s\nCompare.\n' \
        "$src/tests/data/vision/rgb64.png" "$src/tests/data/vision/rgb100x37.png" |
       LOCKSTEP_CHAT_STATS=1 "$bin" chat -m "$src/tests/data/gemma3v_tiny.gguf" --mmproj "$src/tests/data/gemma3v_tiny_mmproj.gguf" \
         -n 4 --temp 0 -c 256 2>&1)" || { echo "FAIL: chat with images exited non-zero"; echo "$out"; exit 1; }
counts="$(sed -nE 's/^\[images: ([0-9]+) encoded, ([0-9]+) found in the cache\]$/\1 \2/p' <<<"$out" | tr '\n' ',')"
[ "$counts" = "1 0,0 1,1 1," ] || { echo "FAIL: images encoded / found per turn: '$counts', want '1 0,0 1,1 1,'"; echo "$out"; exit 1; }
grep -q "image: cannot open '/nonexistent.png'" <<<"$out" || { echo "FAIL: a missing image was not named"; echo "$out"; exit 1; }
echo "chat: images encoded once each (turns: $counts), a missing file named and the chat going on"
