#!/usr/bin/env bash
# The C API test (capi_test.c) with the models it needs beside the committed ones: the tiny
# qwen35 hybrid with a vocabulary, and the tiny Gemma 4 with a chat template of its own
# (chat_template.jinja), both written by lockstep-make-test-model into OUT. CTest's capi entry
# and the ASan + UBSan stage of tools/scripts/test.sh run it.
#   run_capi.sh MAKE_TEST_MODEL CAPI_TEST SOURCE_DIR OUT
set -euo pipefail
tool=$1 test=$2 src=$3 out=$4
mkdir -p "$out/tmp"
"$tool" --vocab-for "$src/tests/data/qwen35_tiny.gguf" --out "$out/qwen35.gguf" >/dev/null
"$tool" --tokens-for "$src/tests/data/gemma4_tiny.gguf" --chat-template "$src/tests/capi/chat_template.jinja" \
  --out "$out/gemma4_template.gguf" >/dev/null
exec "$test" "$src/tests/data" "$out/tmp" "$out/qwen35.gguf" "$out/gemma4_template.gguf" "$src/tests/capi/chat_template.jinja"
