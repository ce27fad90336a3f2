#!/usr/bin/env bash
# Installs what lockstep needs (Debian packages), fetches the default model, and builds
# the CLI (only) in Release into build/. Safe to run again: it skips what is already done.
set -euo pipefail
cd "$(dirname "$0")/../.."

PACKAGES=(cmake ninja-build make g++ python3 python3-pip python3-venv libtbb-dev libxsimd-dev xtl-dev catch2
          libvulkan-dev glslang-tools spirv-tools mesa-vulkan-drivers pkg-config libcpp-httplib-dev nlohmann-json3-dev
          ccache libopenmpi-dev openmpi-bin libpng-dev libjpeg-dev)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "lockstep: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

bash tools/scripts/fetch_model.sh >/dev/null

BUILD="${LOCKSTEP_BUILD:-build}"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${LOCKSTEP_CMAKE_ARGS:-} >/dev/null
# The CLI only: what the first README command runs (tools/scripts/test.sh builds the rest).
cmake --build "$BUILD" --parallel "$(nproc)" --target lockstep
echo "lockstep: built $BUILD/lockstep" >&2
