#!/usr/bin/env bash
# Vulkan speed against llama.cpp's Vulkan backend on the same device, alternating in one run
# (these machines are shared and noisy, so only ratios taken side by side mean anything).
#
#   tools/scripts/vulkan_peer_bench.sh LOCKSTEP LLAMA_BENCH MODEL [ROUNDS] [PROMPTS] [GENS] [DEVICE] [FA]
#
# LLAMA_BENCH: llama.cpp's llama-bench built with -DGGML_VULKAN=ON beside the project (never
# committed). Each round runs `lockstep bench --backend vulkan` and then llama-bench -ngl 99
# with flash attention off and on (FA, default 0,1: the faster is the peer's figure), one
# repetition each, and prints t/s and the ratios. PROMPTS and GENS are comma lists (default
# 64,512 and 16,128). DEVICE is the Vulkan device index of both (default 0): llama.cpp skips
# CPU devices such as lavapipe unless GGML_VK_VISIBLE_DEVICES names them, which this sets.
set -euo pipefail
LS=${1:?lockstep binary}; LB=${2:?llama-bench built with Vulkan}; M=${3:?model}
R=${4:-1}; P=${5:-64,512}; N=${6:-16,128}; DEV=${7:-0}; FA=${8:-0,1}
# t/s of test $1 in llama-bench / lockstep bench markdown output (the last column but one,
# the figure before "±"); the largest when several rows match (llama-bench's -fa 0,1).
col() { awk -F'|' -v t=" $1 " '$0 ~ t {gsub(/ /,"",$(NF-1)); split($(NF-1),a,"±"); if (a[1] > best) best = a[1]} END {print best}'; }
tests=()
for p in ${P//,/ }; do [ "$p" != 0 ] && tests+=("pp$p"); done
for n in ${N//,/ }; do [ "$n" != 0 ] && tests+=("tg$n"); done
printf "%-6s" round; for t in "${tests[@]}"; do printf " %9s %9s %6s" "L:$t" "G:$t" ratio; done; echo
for r in $(seq "$R"); do
  lo=$("$LS" bench -m "$M" --backend vulkan --device "$DEV" -p "$P" -n "$N" -r 1 2>&1)
  go=$(GGML_VK_VISIBLE_DEVICES=$DEV "$LB" -m "$M" -ngl 99 -fa "$FA" -p "$P" -n "$N" -r 1 2>&1)
  printf "%-6s" "$r"
  for t in "${tests[@]}"; do
    l=$(echo "$lo" | col "$t"); g=$(echo "$go" | col "$t")
    printf " %9s %9s %6s" "$l" "$g" "$(awk -v a="$l" -v b="$g" 'BEGIN{if (b > 0) printf "%.2f", a / b; else print "-"}')"
  done
  echo
done
