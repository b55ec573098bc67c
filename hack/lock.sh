#!/usr/bin/env bash
# Regenerates the image's locks, every pin with the sha256 of every file the index publishes for
# it, resolved by uv for the image's interpreter and platform:
#   requirements/image.lock  pyproject.toml's [project].dependencies and the nvml extra (never
#                            the test extra): the Dockerfile and hack/image.sh install from it;
#   requirements/build.lock  pyproject.toml's [build-system].requires: the Dockerfile builds the
#                            wheel with them (--no-build-isolation), nothing fetched unhashed.
# Both install with pip --require-hashes --no-deps; tests/test_image_lock.py checks them in CI
# without network (docs/design.md D47).
#
#   hack/lock.sh                          keep the current pins where they still satisfy pyproject
#   hack/lock.sh --upgrade                every pin to the newest release
#   hack/lock.sh --upgrade-package NAME   one pin
#
# uv: `pip install uv` (measured with uv 0.13.9). UV=/path/to/uv overrides.
set -euo pipefail

PYTHON_VERSION=3.11                # the image's interpreter: python:3.11-slim-bookworm, bookworm's python3
PYTHON_PLATFORM=x86_64-manylinux_2_36 # linux amd64, glibc 2.36 (bookworm)
UV="${UV:-uv}"

cd "$(dirname "$0")/.."
command -v "$UV" >/dev/null || { echo "lock: $UV not found: pip install uv" >&2; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# lock OUT WHAT SOURCE [uv args]: compile SOURCE (a file, or - for stdin) into OUT with a header
lock() {
  local out=$1 what=$2 source=$3
  shift 3
  : >"$tmp"
  [ -f "$out" ] && grep -v '^#!' "$out" >"$tmp" # the current pins are uv's preferences
  "$UV" pip compile "$source" --generate-hashes --annotation-style split \
    --python-version "$PYTHON_VERSION" --python-platform "$PYTHON_PLATFORM" \
    --custom-compile-command "hack/lock.sh" --quiet -o "$tmp" "$@" "${UPGRADE[@]}"
  {
    echo "#! The dra-bridge image's $what."
    echo "#! Resolved for CPython $PYTHON_VERSION on $PYTHON_PLATFORM (python:3.11-slim-bookworm, Debian bookworm)."
    echo "#! Installed with: pip install --require-hashes --no-deps -r $out (Dockerfile, hack/image.sh)."
    echo "#! Regenerate with hack/lock.sh; tests/test_image_lock.py checks it (docs/design.md D47)."
    cat "$tmp"
  } >"$out"
  echo "lock: wrote $out ($(grep -c '^[a-z0-9]' "$out") pins)" >&2
}

UPGRADE=("$@")
lock requirements/image.lock "Python dependencies: pyproject.toml's dependencies and the nvml extra" \
  pyproject.toml --extra nvml
python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))' |
  lock requirements/build.lock "build tools: pyproject.toml's [build-system].requires" -
