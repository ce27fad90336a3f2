#!/usr/bin/env bash
# Every misuse of the CLI ends with a message naming the problem and a non-zero exit,
# never a crash. Usage: cli_errors.sh LOCKSTEP_BINARY SOURCE_DIR [MAKE_TEST_MODEL_BINARY]
set -u
bin="$1"; src="$2"; make_model="${3:-}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fails=0; passes=0

# expect CODE PATTERN -- ARGS...
expect() {
  local code="$1" pattern="$2"; shift 3
  local out rc
  out="$("$bin" "$@" 2>&1 </dev/null)"; rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qiE -- "$pattern" <<<"$out"; then
    echo "FAIL: lockstep $* -> exit $rc (want $code), output:"; echo "$out" | head -5; fails=$((fails + 1))
  else
    passes=$((passes + 1))
  fi
}

expect 2 "no command"                     --
expect 2 "unknown command 'frobnicate'"   -- frobnicate
expect 2 "unknown option '--bogus'"       -- run --bogus
expect 2 "-n expects an integer, got 'ten'" -- run -n ten -p hi
expect 2 "-c must be positive"            -- run -c 0 -p hi
expect 2 "--temp expects a number"        -- run --temp hot -p hi
expect 2 "-m needs a value"               -- run -p hi -m
expect 2 "--backend must be cpu, vulkan or cuda" -- run --backend tpu -p hi
expect 2 "-ctk must be one of f32, f16, q8_0, q4_0"    -- run -ctk q5_k -p hi
expect 2 "run needs a prompt"             -- run
expect 2 "perplexity needs a text file"   -- perplexity
expect 2 "--kl-divergence-base needs a value" -- perplexity -f "$src/tests/data/GPL-3.txt" --kl-divergence-base
expect 1 "cannot write /nonexistent/dir/x.kld" -- perplexity -m "$src/tests/data/llama_tiny.gguf" -f "$src/tests/data/GPL-3.txt" -c 64 --chunks 1 --kl-divergence-base /nonexistent/dir/x.kld
expect 1 "model file not found: /nonexistent.gguf" -- run -m /nonexistent.gguf -p hi
# Each GGUF message names its problem (every message carries the path, so "gguf" alone
# would match any of them).
tiny="$src/tests/data/gemma4_tiny.gguf"
head -c "$(($(wc -c <"$tiny") - 100))" "$tiny" > "$tmp/trunc.gguf"  # header whole, tensor data cut short
expect 1 "gguf: tensor '[^']+' extends past end of file .*trunc\.gguf" -- run -m "$tmp/trunc.gguf" -p hi
# serve: flags, a model that fails to load after the server listens, a port already taken.
expect 2 "--port must be in \[0, 65535\], got 70000" -- serve --port 70000
expect 2 "-np must be positive"           -- serve -np 0
expect 2 "--max-queue must be in \[0, 4096\]" -- serve --max-queue -1
expect 2 "unknown option '--bogus' for 'serve'" -- serve --bogus
expect 2 "unknown option '--host' for 'run'" -- run --host 0.0.0.0 -p hi
expect 1 "model file not found: /nonexistent.gguf" -- serve -m /nonexistent.gguf
expect 1 "serve: error: gguf: tensor '[^']+' extends past end of file .*trunc\.gguf" -- serve -m "$tmp/trunc.gguf" --port 0
python3 -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)" > "$tmp/port" &
holder=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
taken="$(cat "$tmp/port")"
expect 1 "cannot listen on 127.0.0.1:$taken" -- serve -m "$tiny" --port "$taken"
kill "$holder" 2>/dev/null
# images: flags, a projector that is not the model's pair, bad image files.
g3v="$src/tests/data/gemma3v_tiny.gguf"; mmp="$src/tests/data/gemma3v_tiny_mmproj.gguf"; img="$src/tests/data/vision/rgb64.png"
head -c 300 "$img" > "$tmp/trunc.png"
printf 'GIF89a not an image' > "$tmp/x.gif"
expect 2 "--image needs the model's projector file: --mmproj FILE" -- run -m "$g3v" --image "$img" -p hi
expect 2 "--mmproj is given but no --image" -- run -m "$g3v" --mmproj "$mmp" -p hi
expect 1 "PNG image: the file ends early \(truncated\)" -- run -m "$g3v" --mmproj "$mmp" --image "$tmp/trunc.png" -p hi
expect 1 "not a PNG or JPEG file" -- run -m "$g3v" --mmproj "$mmp" --image "$tmp/x.gif" -p hi
expect 1 "image: cannot open '/nonexistent.png'" -- run -m "$g3v" --mmproj "$mmp" --image /nonexistent.png -p hi
expect 1 "is for gemma3 text models, not qwen3" -- run -m "$src/tests/data/qwen3_tiny.gguf" --mmproj "$mmp" --image "$img" -p hi
expect 1 "not a projector \(mmproj\) file" -- run -m "$g3v" --mmproj "$g3v" --image "$img" -p hi
expect 1 "2 image markers \(<__media__>\) for 1 images" -- run -m "$g3v" --mmproj "$mmp" --image "$img" -p "<__media__> <__media__>"
q35v="$src/tests/data/qwen35v_tiny.gguf"; qmp="$src/tests/data/qwen35v_tiny_mmproj.gguf"
expect 1 "is for qwen35 or qwen35moe or qwen3vl or qwen3vlmoe text models, not gemma3" -- run -m "$g3v" --mmproj "$qmp" --image "$img" -p hi
expect 2 "--image-max-tokens must be positive, got 0" -- run -m "$q35v" --mmproj "$qmp" --image "$img" --image-max-tokens 0 -p hi
expect 1 "at least 40 and at most 4 tokens per image cannot both hold" -- run -m "$q35v" --mmproj "$qmp" --image "$img" --image-min-tokens 40 --image-max-tokens 4 -p hi
# speculative decoding: flags, the draft model's file and vocabulary.
expect 2 "--draft-max must be in \[0, 256\], got -1" -- run --draft-max -1 -p hi
expect 2 "--draft-min must be in \[0, 256\], got -2" -- run --draft-min -2 -p hi
expect 2 "--draft-min \(5\) must not exceed --draft-max \(2\)" -- run --draft-min 5 --draft-max 2 -p hi
expect 2 "--spec-draft-n-max must be in \[0, 256\], got 300" -- run --spec-draft-n-max 300 -p hi
expect 2 "--spec must be off, lookup or draft; got 'foo'" -- run --spec foo -p hi
expect 2 "--spec draft needs a draft model: -md FILE" -- run --spec draft -p hi
expect 2 "-md is used with --spec draft only" -- run --spec lookup -md "$tiny" -p hi
expect 2 "the server's slots speculate with prompt lookup only" -- serve --spec draft -md "$tiny" -m "$tiny"
expect 1 "draft model file not found: /nonexistent.gguf" -- run -m "$tiny" -md /nonexistent.gguf -p hi
expect 1 "a draft model must share the model's vocabulary" -- run -m "$tiny" -md "$src/tests/data/llama_tiny.gguf" -p hi
printf 'GGUF\x03\x00\x00\x00' > "$tmp/short.gguf"
expect 1 "gguf: truncated file: tensor count needs 8 bytes at offset 8, only 0 left" -- info -m "$tmp/short.gguf"
printf 'not a model at all' > "$tmp/text.gguf"
expect 1 "gguf: bad magic 'not ' \(expected 'GGUF'\): not a GGUF file" -- info -m "$tmp/text.gguf"
expect 1 "cannot read"                    -- run -f /nonexistent/prompt.txt
expect 0 "usage: lockstep run"            -- run --help
expect 0 "-d LIST +depths"                -- bench --help
expect 2 "-d values must be >= 0, got -1" -- bench -d -1
# --backend cuda where no NVIDIA GPU answers (or in a build without CUDA): a clear error
# before the model is read. Machines with a GPU run the CUDA suite instead.
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect 1 "no usable NVIDIA GPU|has no cuda backend" -- run --backend cuda -m "$tmp/text.gguf" -p hi
fi

# Placement (issue 31): bad flags, unknown devices, patterns matching nothing, splits that do
# not add up, plans that do not fit: each refused before the model loads.
expect 2 "-ngl expects an integer, got 'many'" -- run -ngl many -p hi
expect 2 "-ngl must be a count of layers >= 0, 'all' or 'auto'" -- run -ngl -3 -p hi
expect 2 "--split-mode tensor \(heads and FFN units over the GPUs\) is not built" -- run --split-mode tensor -p hi
expect 2 "--split-mode must be none, layer or row, got 'diagonal'" -- run --split-mode diagonal -p hi
expect 2 "-ts expects a number, got 'x'" -- run -ts 1,x -p hi
expect 2 "-ot expects PATTERN=DEVICE" -- run -ot noequals -p hi
expect 2 "--n-cpu-moe expects an integer" -- run --n-cpu-moe lots -p hi
expect 1 "no device 'tpu0'; this machine has: cpu" -- run -m "$tiny" --device tpu0 -p hi
expect 1 "no device 'cuda7'" -- run -m "$tiny" --device cuda7 -p hi
expect 1 "-ot 'nomatch=cpu' matches no tensor of this model" -- run -m "$tiny" -ot 'nomatch=cpu' -p hi
expect 1 "-ot 'ffn_\(=cpu': 'ffn_\(' is not a regular expression" -- run -m "$tiny" -ot 'ffn_(=cpu' -p hi
expect 1 "-ot 'ffn=vulkan3': no device 'vulkan3' \(open: cpu\)" -- run -m "$tiny" -ot 'ffn=vulkan3' -p hi
expect 1 "--cpu-moe/--n-cpu-moe: this model has no expert tensors" -- run -m "$tiny" --cpu-moe -p hi
expect 1 "--tensor-split needs GPU devices" -- run -m "$tiny" -ts 1,1 -p hi
expect 1 "--split-mode row needs two GPU devices or more" -- run -m "$tiny" --split-mode row -p hi
expect 1 "--backend reference runs alone" -- run -m "$tiny" --backend reference -ngl 1 -p hi
if "$bin" devices 2>/dev/null | grep -q '^vulkan '; then
  expect 1 "--tensor-split gives 3 shares for 1 GPU device" -- run -m "$tiny" --device vulkan0 -ts 1,1,1 -p hi
  # 64 slots of the default model's full 32768-token context: gigabytes of KV cache.
  expect 1 "the placement does not fit vulkan0: it needs [0-9.]+ GiB \([0-9.]+ MiB weights, [0-9.]+ GiB KV/state, [0-9.]+ MiB compute\) and [0-9.]+ (GiB|MiB) is free" \
    -- serve --port 0 --device vulkan0 -np 64 -c 32768
fi

# lockstep-make-test-model --shape: a wrong shape, a bad thread count, an unwritable path.
if [ -n "$make_model" ]; then
  bin="$make_model"
  expect 2 "no model shape 'gemma9' \(known: gemma3-270m" -- --shape gemma9 --out "$tmp/s.gguf"
  expect 2 "--threads must be at least 1"  -- --shape gemma3-270m --threads 0 --out "$tmp/s.gguf"
  expect 1 "cannot create '/nonexistent/s.gguf'" -- --shape gemma3-270m --out /nonexistent/s.gguf
fi

echo "cli errors: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
