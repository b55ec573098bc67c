#!/usr/bin/env bash
# Assembles the dra-bridge container image for the test suite, without a registry: the
# equivalent of the user-facing Dockerfile, built from Debian packages and the project's wheel.
#
#   hack/image.sh build         build the image unless the cache holds it; prints its directory
#   hack/image.sh env           print the directory of the image of the current sources (fails if unbuilt)
#   hack/image.sh key           print the content key of the current sources (wheel, lock, Debian list)
#   hack/image.sh archive OUT   build (or reuse) it and write it to OUT as an OCI archive (one image,
#                               tagged with the version), for a registry of yours:
#                                 skopeo copy oci-archive:OUT docker://REGISTRY/dra-bridge:VERSION
#
# Recipe (root, Linux, Debian host):
#   1. the project's wheel, built from the git tree (tracked and untracked, not ignored files);
#   2. a minimal Debian ($SUITE, debootstrap --variant=minbase) with its python3, from the mirror
#      the machine's apt already uses; cached by the Debian package list and versions;
#   3. the dependencies pinned by requirements/image.lock (the Dockerfile's lock), as wheels
#      for CPython 3.11 on linux x86_64 checked against the lock's hashes, from the package index
#      the machine's pip uses; installed offline into a venv at /opt/dra-bridge inside that root
#      (chroot, no network) with --require-hashes --no-deps, then the wheel with --no-deps;
#   4. packed with umoci as a two-layer OCI image (Debian, then the venv), user 65532 (non-root),
#      the three commands on PATH; copied by skopeo to a docker-archive that
#      `ctr -n k8s.io images import` loads into the test node's containerd.
# Cached by content under $DRA_BRIDGE_CACHE/image-<key>/ {dra-bridge.tar, image.env}; the key
# hashes $IMAGE_REV, the Debian package list (suite, packages, the mirror's python3 version), the
# lock and the wheel's members, so a change to the lock or to any file that goes into the wheel
# makes a new image.
set -euo pipefail

IMAGE_REV="${IMAGE_REV:-2}" # bump when the recipe below changes
SUITE="${DEBIAN_SUITE:-bookworm}"
INCLUDE=(python3 ca-certificates)
IMAGE_NAME="${IMAGE_NAME:-dra-bridge.local/dra-bridge}"
IMAGE_USER=65532
VENV=/opt/dra-bridge
DRA_BRIDGE_CACHE="${DRA_BRIDGE_CACHE:-$HOME/.cache/dra-bridge}"
APT_PACKAGES=(debootstrap umoci skopeo)
REPO=$(cd "$(dirname "$0")/.." && pwd)
LOCK="$REPO/requirements/image.lock"
PY="${PYTHON:-python3}"

LOG_PREFIX=image
# shellcheck source=hack/control-plane.sh
. "$(dirname "$0")/control-plane.sh" # helpers only: log, die, CLEANUP, install_packages

mirror() { # the Debian mirror of the machine's apt sources (deb822 or one-line format)
  local m
  m=$(grep -hs -E '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
      /etc/apt/sources.list.d/*.sources | grep -E '/debian/?$' | grep -v security |
      head -1 | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//; s/[[:space:]].*$//')
  echo "${m:-http://deb.debian.org/debian}"
}

debian_list() { # what the Debian layer is made of: suite, variant, packages, python3's version
  local v
  v=$(apt-cache show --no-all-versions python3.11-minimal 2>/dev/null | sed -n 's/^Version: //p' | head -1)
  printf '%s\n' "suite=$SUITE" "variant=minbase" "include=${INCLUDE[*]}" "python3.11=${v:-unknown}"
}

# build_wheel OUT: the project's wheel from a copy of the git tree (no stale build/ can leak in).
build_wheel() {
  local out=$1 src
  src=$(mktemp -d "${TMPDIR:-/tmp}/dra-bridge-src-XXXXXX")
  CLEANUP+=("$src")
  (cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 -I{} sh -c '[ -e "$1" ] && echo "$1"' _ {} | tar -cf - -T -) | tar -xf - -C "$src"
  "$PY" -m pip wheel -q --no-deps -w "$out" "$src" >&2 || die "building the project's wheel failed"
}

wheel_digest() { # sha256 over the wheel's members (names and contents), not the zip's timestamps
  "$PY" - "$1" <<'EOF'
import hashlib, sys, zipfile
h = hashlib.sha256()
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in sorted(z.namelist()):
        h.update(name.encode() + b"\0" + hashlib.sha256(z.read(name)).digest())
print(h.hexdigest())
EOF
}

content_key() { # content_key WHEEL
  { echo "rev=$IMAGE_REV"; debian_list; echo "lock=$(sha256sum <"$LOCK" | cut -d' ' -f1)"; echo "wheel=$(wheel_digest "$1")"; } |
    sha256sum | cut -c1-16
}

# debian_base: sets BASE_TAR to the minimal Debian root as a tarball, cached by the package list.
debian_base() {
  local key dir work
  key=$(debian_list | sha256sum | cut -c1-12)
  dir="$DRA_BRIDGE_CACHE/debian-$SUITE-$key"
  BASE_TAR="$dir/rootfs.tar"
  if [ -s "$BASE_TAR" ]; then log "reusing $dir"; return; fi
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-debian-XXXXXX")
  CLEANUP+=("$work")
  log "debootstrap $SUITE (minbase + ${INCLUDE[*]}) from $(mirror)"
  debootstrap --variant=minbase --include="$(IFS=,; echo "${INCLUDE[*]}")" "$SUITE" "$work/rootfs" "$(mirror)" \
    >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  # what a container never uses: package caches and lists, docs, man pages, locales
  rm -rf "$work/rootfs"/var/cache/apt/* "$work/rootfs"/var/lib/apt/lists/* "$work/rootfs"/usr/share/doc/* \
    "$work/rootfs"/usr/share/man/* "$work/rootfs"/usr/share/locale/* "$work/rootfs"/var/log/*
  mkdir -p "$work/out"
  tar -C "$work/rootfs" --numeric-owner -cf "$work/out/rootfs.tar" .
  debian_list >"$work/out/packages.txt"
  chroot "$work/rootfs" dpkg-query -W >>"$work/out/packages.txt"
  rm -rf "$dir.tmp" && mv "$work/out" "$dir.tmp" && mv -T "$dir.tmp" "$dir"
}

image_dir() { echo "$DRA_BRIDGE_CACHE/image-$1"; }

cmd_build() {
  local start=$SECONDS work wheel key dir base version layout bundle ref pip
  [ "$(uname -s)" = Linux ] || die "the image is assembled on Linux"
  [ "$(id -u)" -eq 0 ] || die "assembling the image needs root (debootstrap, chroot, file ownership)"
  mkdir -p "$DRA_BRIDGE_CACHE"
  exec 9>"$DRA_BRIDGE_CACHE/.image.lock" # one image build at a time per cache
  flock 9
  install_packages "${APT_PACKAGES[@]}"
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-image-XXXXXX")
  CLEANUP+=("$work")
  build_wheel "$work/wheel"
  wheel=$(echo "$work"/wheel/*.whl)
  key=$(content_key "$wheel")
  dir=$(image_dir "$key")
  IMAGE_DIR=$dir # for cmd_archive
  if [ -s "$dir/dra-bridge.tar" ]; then log "reusing $dir"; echo "$dir"; return; fi
  debian_base
  base=$BASE_TAR
  version=$(basename "$wheel" | cut -d- -f2)
  ref="$IMAGE_NAME:$version-$key"
  log "building $ref"
  # the locked dependencies as wheels, each checked against the lock's hashes: fetched by the
  # host's interpreter, which must be the image's (CPython 3.11, x86_64, a glibc the image's
  # matches), so that pip picks the very wheels the image's pip will take
  "$PY" -c 'import platform, sys; sys.exit(sys.version_info[:2] != (3, 11) or platform.machine() != "x86_64")' ||
    die "$PY is not CPython 3.11 on x86_64, the image's interpreter (Debian $SUITE): set PYTHON"
  "$PY" -m pip download -q --require-hashes --no-deps --only-binary=:all: -d "$work/wheels" -r "$LOCK" >&2 ||
    die "fetching the locked dependencies ($LOCK) failed"
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$work/pip" pip >&2 || die "fetching pip failed"

  layout="$work/oci" bundle="$work/bundle"
  umoci init --layout "$layout"
  umoci new --image "$layout:dra-bridge"
  umoci unpack --image "$layout:dra-bridge" "$bundle" >/dev/null
  tar -C "$bundle/rootfs" --numeric-owner -xf "$base"
  umoci repack --image "$layout:dra-bridge" "$bundle" # layer 1: Debian
  rm -rf "$bundle"
  umoci unpack --image "$layout:dra-bridge" "$bundle" >/dev/null
  mkdir -p "$bundle/rootfs/tmp/install"
  cp "$work"/wheels/*.whl "$work"/pip/*.whl "$wheel" "$LOCK" "$bundle/rootfs/tmp/install/"
  chroot "$bundle/rootfs" env -i PATH=/usr/bin:/bin /usr/bin/python3 -m venv --without-pip "$VENV"
  # pip runs from its own wheel, offline: nothing but these wheels enters the image
  pip=("$VENV/bin/python" "/tmp/install/$(basename "$(echo "$work"/pip/pip-*.whl)")/pip")
  chroot "$bundle/rootfs" env -i PATH=/usr/bin:/bin "${pip[@]}" install -q --no-index --no-cache-dir \
    --disable-pip-version-check --find-links /tmp/install --require-hashes --no-deps -r /tmp/install/image.lock >&2 ||
    die "installing the locked dependencies into the image failed"
  chroot "$bundle/rootfs" env -i PATH=/usr/bin:/bin "${pip[@]}" install -q --no-deps --no-index --no-cache-dir \
    --disable-pip-version-check "/tmp/install/$(basename "$wheel")" >&2 || die "installing the wheel into the image failed"
  chroot "$bundle/rootfs" env -i PATH=/usr/bin:/bin "${pip[@]}" check >&2 || die "the image's environment is inconsistent"
  rm -rf "$bundle/rootfs/tmp/install" "$bundle/rootfs/root/.cache"
  echo "dra-bridge:x:$IMAGE_USER:$IMAGE_USER:dra-bridge:/nonexistent:/usr/sbin/nologin" >>"$bundle/rootfs/etc/passwd"
  echo "dra-bridge:x:$IMAGE_USER:" >>"$bundle/rootfs/etc/group"
  umoci repack --image "$layout:dra-bridge" "$bundle" # layer 2: the venv and the user
  umoci config --image "$layout:dra-bridge" --os linux --architecture amd64 \
    --config.user "$IMAGE_USER:$IMAGE_USER" --config.workingdir / \
    --config.env "PATH=$VENV/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --config.env PYTHONDONTWRITEBYTECODE=1 --config.env PYTHONUNBUFFERED=1 \
    --config.cmd dra-migrate --config.cmd --help \
    --config.label "org.opencontainers.image.title=dra-bridge" \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.description=dra-migrate, dra-webhook, dra-bridge"
  mkdir -p "$work/out"
  skopeo --insecure-policy copy -q "oci:$layout:dra-bridge" "docker-archive:$work/out/dra-bridge.tar:$ref"
  printf '%s\n' "IMAGE=$ref" "IMAGE_KEY=$key" "IMAGE_VERSION=$version" "IMAGE_USER=$IMAGE_USER" >"$work/out/image.env"
  cp "$(dirname "$base")/packages.txt" "$work/out/debian-packages.txt"
  rm -rf "$dir.tmp" && mv "$work/out" "$dir.tmp" && mv -T "$dir.tmp" "$dir"
  log "image $ref in $dir ($(du -h "$dir/dra-bridge.tar" | cut -f1); build step took $((SECONDS - start))s)"
  echo "$dir"
}

cmd_env() {
  local work key dir
  work=$(mktemp -d "${TMPDIR:-/tmp}/dra-bridge-key-XXXXXX")
  CLEANUP+=("$work")
  build_wheel "$work"
  key=$(content_key "$(echo "$work"/*.whl)")
  dir=$(image_dir "$key")
  [ -s "$dir/dra-bridge.tar" ] && [ -s "$dir/image.env" ] ||
    die "the image of the current sources (key $key) is not built: run $0 build"
  echo "$dir"
}

cmd_key() {
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/dra-bridge-key-XXXXXX")
  CLEANUP+=("$work")
  build_wheel "$work"
  content_key "$(echo "$work"/*.whl)"
}

# cmd_archive OUT: the image of the current sources as an OCI archive (oci-archive:OUT), one
# image tagged with its version, which skopeo, crane or podman push to a registry as it is.
cmd_archive() {
  local out=${1:-} dir version
  [ -n "$out" ] || die "usage: $0 archive OUT.tar"
  cmd_build >/dev/null # in this shell: its clean-up list and lock stay this script's
  dir=$IMAGE_DIR
  version=$(sed -n 's/^IMAGE_VERSION=//p' "$dir/image.env")
  rm -f "$out"
  skopeo --insecure-policy copy -q "docker-archive:$dir/dra-bridge.tar" "oci-archive:$out:$version" ||
    die "writing the OCI archive $out failed"
  log "wrote $out (oci-archive, tag $version): skopeo copy oci-archive:$out docker://REGISTRY/dra-bridge:$version"
}

case "${1:-}" in
  build) cmd_build ;;
  env) cmd_env ;;
  key) cmd_key ;;
  archive) cmd_archive "${2:-}" ;;
  *) echo "usage: $0 build|env|key|archive OUT.tar" >&2; exit 2 ;;
esac
