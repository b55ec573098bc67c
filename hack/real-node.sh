#!/usr/bin/env bash
# Builds the parts of a real test node (kubelet + containerd + runc) for the `real_node` tests.
#
#   hack/real-node.sh build     build what is missing from the cache (reused when present)
#   hack/real-node.sh env       print the node directory (binaries, images, node.env)
#   hack/real-node.sh versions  print the pinned versions
#
# From the Go module proxy, cached by version like hack/control-plane.sh's control plane:
#   $DRA_BRIDGE_CACHE/kubelet-$KUBELET_VERSION/kubelet
#   $DRA_BRIDGE_CACHE/kube-proxy-$KUBELET_VERSION/kube-proxy (iptables mode: Services for the pods
#     of the `helm install` e2e, tests/e2e/serviceproxy.py)
#   $DRA_BRIDGE_CACHE/containerd-$CONTAINERD_VERSION/{containerd,ctr,containerd-shim-runc-v2}
# Built locally from Debian packages, cached under the packages' versions:
#   $DRA_BRIDGE_CACHE/images-$IMAGES_REV-<busybox version>/{busybox.tar,pause.tar}
#     busybox: a busybox-static rootfs; pause: a tiny static C program (busybox `sleep` when
#     there is no C compiler), each packed with umoci and copied by skopeo to a docker-archive.
# Debian packages installed with apt-get when missing (it says which): runc,
#   containernetworking-plugins, busybox-static, skopeo, umoci, iptables.
# What `env` prints: $DRA_BRIDGE_CACHE/node-$KUBELET_VERSION-$CONTAINERD_VERSION-<images>/ with
# symlinks to every binary (runc and the CNI plugin dir included), images/ and node.env (the
# versions and image references, KEY=VALUE) that tests/e2e/realnode.py reads.
set -euo pipefail

KUBELET_VERSION="${KUBELET_VERSION:-v1.36.3}"
CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.4.2}"
IMAGES_REV="${IMAGES_REV:-2}" # bump when the image recipe below changes
DRA_BRIDGE_CACHE="${DRA_BRIDGE_CACHE:-$HOME/.cache/dra-bridge}"
BUSYBOX_IMAGE=dra-bridge.local/busybox:local
PAUSE_IMAGE=registry.k8s.io/pause:local
APT_PACKAGES=(runc containernetworking-plugins busybox-static skopeo umoci iptables)
RUNC=/usr/sbin/runc
CNI_BIN_DIR=/usr/lib/cni

LOG_PREFIX=real-node
# shellcheck source=hack/control-plane.sh
. "$(dirname "$0")/control-plane.sh" # helpers only: go_env, write_wrapper, k8s_ldflags, log, die, install_packages

KUBELET_DIR="$DRA_BRIDGE_CACHE/kubelet-$KUBELET_VERSION"
KUBE_PROXY_DIR="$DRA_BRIDGE_CACHE/kube-proxy-$KUBELET_VERSION"
CONTAINERD_DIR="$DRA_BRIDGE_CACHE/containerd-$CONTAINERD_VERSION"
CONTAINERD_CMDS=(containerd ctr containerd-shim-runc-v2)

busybox_version() { dpkg-query -W -f '${Version}' busybox-static 2>/dev/null | tr ':~+' '---'; }
images_dir() { echo "$DRA_BRIDGE_CACHE/images-$IMAGES_REV-$(busybox_version)"; }
node_dir() { echo "$DRA_BRIDGE_CACHE/node-$KUBELET_VERSION-$CONTAINERD_VERSION-$(basename "$(images_dir)")"; }

# build_k8s_cmd CMD DIR: k8s.io/kubernetes/cmd/CMD at $KUBELET_VERSION into DIR/CMD.
build_k8s_cmd() {
  local cmd=$1 dir=$2 work
  if have_all "$dir" "$cmd"; then log "reusing $dir"; return; fi
  go_env
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-$cmd-XXXXXX")
  CLEANUP+=("$work")
  write_wrapper "$work" "dra-bridge.local/$cmd-build" k8s.io/kubernetes "$KUBELET_VERSION" \
    "v0.${KUBELET_VERSION#v1.}"
  log "building $cmd $KUBELET_VERSION"
  mkdir -p "$work/out"
  (cd "$work" && nice -n 10 go build -ldflags "$(k8s_ldflags "$KUBELET_VERSION")" \
    -o "$work/out/$cmd" "k8s.io/kubernetes/cmd/$cmd")
  rm -rf "$dir.tmp" && mv "$work/out" "$dir.tmp" && mv -T "$dir.tmp" "$dir"
}

build_containerd() {
  local work mod=github.com/containerd/containerd/v2 tags=urfave_cli_no_docs,no_btrfs ld
  if have_all "$CONTAINERD_DIR" "${CONTAINERD_CMDS[@]}"; then log "reusing $CONTAINERD_DIR"; return; fi
  go_env
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-containerd-XXXXXX")
  CLEANUP+=("$work")
  printf 'module dra-bridge.local/containerd-build\n\ngo 1.24\n\nrequire %s %s\n' \
    "$mod" "$CONTAINERD_VERSION" >"$work/go.mod"
  ld="-s -w -X $mod/version.Version=$CONTAINERD_VERSION -X $mod/version.Revision=module-proxy"
  log "building containerd, ctr, containerd-shim-runc-v2 $CONTAINERD_VERSION (minutes on a cold cache)"
  mkdir -p "$work/out"
  (cd "$work" && nice -n 10 go build -tags "$tags" -ldflags "$ld" -o "$work/out/" \
    "$mod/cmd/containerd" "$mod/cmd/ctr" &&
    nice -n 10 go build -tags "$tags,no_grpc" -ldflags "$ld" -o "$work/out/" \
    "$mod/cmd/containerd-shim-runc-v2")
  rm -rf "$CONTAINERD_DIR.tmp" && mv "$work/out" "$CONTAINERD_DIR.tmp" &&
    mv -T "$CONTAINERD_DIR.tmp" "$CONTAINERD_DIR"
}

# pack_image WORK NAME REF OUT.tar CMD...: $WORK/rootfs as a one-layer OCI image, then a docker-archive.
pack_image() {
  local work=$1 name=$2 ref=$3 out=$4; shift 4
  local layout="$work/oci" bundle="$work/bundle-$name" arg config=()
  [ -d "$layout" ] || umoci init --layout "$layout"
  umoci new --image "$layout:$name"
  umoci unpack --image "$layout:$name" "$bundle" >/dev/null
  cp -a "$work/rootfs-$name/." "$bundle/rootfs/"
  umoci repack --image "$layout:$name" "$bundle"
  for arg in "$@"; do config+=(--config.cmd "$arg"); done
  umoci config --image "$layout:$name" --os linux --architecture amd64 "${config[@]}"
  skopeo --insecure-policy copy -q "oci:$layout:$name" "docker-archive:$out:$ref"
}

build_images() {
  local dir work applet cc
  dir=$(images_dir)
  if [ -s "$dir/busybox.tar" ] && [ -s "$dir/pause.tar" ]; then log "reusing $dir"; return; fi
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-images-XXXXXX")
  CLEANUP+=("$work")
  log "building the images $BUSYBOX_IMAGE and $PAUSE_IMAGE"
  mkdir -p "$work/rootfs-busybox/bin" "$work/rootfs-busybox/tmp" "$work/rootfs-pause" "$work/out"
  cp /bin/busybox "$work/rootfs-busybox/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$work/rootfs-busybox/bin/$applet"
  done
  pack_image "$work" busybox "$BUSYBOX_IMAGE" "$work/out/busybox.tar" /bin/sh
  cc=$(command -v cc || command -v gcc || true)
  if [ -n "$cc" ]; then
    cat >"$work/pause.c" <<'EOF'
/* The pod sandbox's process: sleeps until SIGINT or SIGTERM, reaps orphaned children. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void quit(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
  struct sigaction q = {.sa_handler = quit}, r = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  sigaction(SIGINT, &q, NULL); sigaction(SIGTERM, &q, NULL); sigaction(SIGCHLD, &r, NULL);
  for (;;) pause();
}
EOF
    "$cc" -static -Os -s -o "$work/rootfs-pause/pause" "$work/pause.c"
    pack_image "$work" pause "$PAUSE_IMAGE" "$work/out/pause.tar" /pause
  else
    log "no C compiler: the pause image runs busybox's sleep"
    mkdir -p "$work/rootfs-pause/bin"
    cp /bin/busybox "$work/rootfs-pause/bin/busybox"
    pack_image "$work" pause "$PAUSE_IMAGE" "$work/out/pause.tar" /bin/busybox sleep 2147483647
  fi
  rm -rf "$dir.tmp" && mv "$work/out" "$dir.tmp" && mv -T "$dir.tmp" "$dir"
}

link_node_dir() {
  local dir c
  dir=$(node_dir)
  mkdir -p "$dir"
  ln -sfn "$KUBELET_DIR/kubelet" "$dir/kubelet"
  ln -sfn "$KUBE_PROXY_DIR/kube-proxy" "$dir/kube-proxy"
  for c in "${CONTAINERD_CMDS[@]}"; do ln -sfn "$CONTAINERD_DIR/$c" "$dir/$c"; done
  ln -sfn "$RUNC" "$dir/runc"
  ln -sfn "$CNI_BIN_DIR" "$dir/cni"
  ln -sfn "$(images_dir)" "$dir/images"
  printf '%s\n' "KUBELET_VERSION=$KUBELET_VERSION" "CONTAINERD_VERSION=$CONTAINERD_VERSION" \
    "BUSYBOX_IMAGE=$BUSYBOX_IMAGE" "PAUSE_IMAGE=$PAUSE_IMAGE" >"$dir/node.env"
}

cmd_build() {
  local start=$SECONDS
  [ "$(uname -s)" = Linux ] || die "a real node needs Linux"
  mkdir -p "$DRA_BRIDGE_CACHE"
  exec 9>"$DRA_BRIDGE_CACHE/.build.lock" # one build at a time per cache (shared with control-plane.sh)
  flock 9
  install_packages "${APT_PACKAGES[@]}"
  build_k8s_cmd kubelet "$KUBELET_DIR"
  build_k8s_cmd kube-proxy "$KUBE_PROXY_DIR"
  build_containerd
  build_images
  link_node_dir
  log "node parts in $(node_dir) (build step took $((SECONDS - start))s)"
}

cmd_env() {
  local dir missing=() f
  dir=$(node_dir)
  for f in kubelet "${CONTAINERD_CMDS[@]}" runc cni/bridge cni/host-local images/busybox.tar \
    images/pause.tar node.env; do [ -e "$dir/$f" ] || missing+=("$f"); done
  command -v iptables >/dev/null || missing+=(iptables)
  [ ${#missing[@]} -eq 0 ] || die "not built yet (missing ${missing[*]} in $dir): run $0 build"
  echo "$dir"
}

case "${1:-}" in
  build) cmd_build ;;
  env) cmd_env ;;
  versions) echo "KUBELET_VERSION=$KUBELET_VERSION CONTAINERD_VERSION=$CONTAINERD_VERSION IMAGES_REV=$IMAGES_REV" ;;
  *) echo "usage: $0 build|env|versions" >&2; exit 2 ;;
esac
