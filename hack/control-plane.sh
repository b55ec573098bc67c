#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler) from the Go module proxy with the machine's Go toolchain.
#
#   hack/control-plane.sh build   build what is missing from the cache (reused when present)
#   hack/control-plane.sh env     print the directory holding all four binaries
#   hack/control-plane.sh versions print the pinned versions
#   hack/control-plane.sh latest [1.MINOR]  newest patch releases on the module proxy
#
# Binaries are cached outside the repository, keyed by version:
#   $DRA_BRIDGE_CACHE/k8s-$K8S_VERSION/{kube-apiserver,kube-controller-manager,kube-scheduler}
#   $DRA_BRIDGE_CACHE/etcd-$ETCD_VERSION/etcd
#   $DRA_BRIDGE_CACHE/bin-$K8S_VERSION-$ETCD_VERSION/  (symlinks to all four: what `env` prints)
# DRA_BRIDGE_K8S_BIN=<dir with all four binaries> skips the build entirely.
# Sourcing this file defines its helpers (write_wrapper, go_env, ...) without running a command.
set -euo pipefail

# One Kubernetes release per run; a later CI matrix can override K8S_VERSION (e.g. v1.34.x).
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
DRA_BRIDGE_CACHE="${DRA_BRIDGE_CACHE:-$HOME/.cache/dra-bridge}"

K8S_DIR="$DRA_BRIDGE_CACHE/k8s-$K8S_VERSION"
ETCD_DIR="$DRA_BRIDGE_CACHE/etcd-$ETCD_VERSION"
BIN_DIR="$DRA_BRIDGE_CACHE/bin-$K8S_VERSION-$ETCD_VERSION"
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler)

log() { printf '[%s] %s\n' "${LOG_PREFIX:-control-plane}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
CLEANUP=()
cleanup() { [ ${#CLEANUP[@]} -eq 0 ] || rm -rf "${CLEANUP[@]}"; }
trap cleanup EXIT

install_packages() { # Debian package names: installs the missing ones with apt-get (root only)
  local p missing=()
  for p in "$@"; do dpkg-query -W -f '${Status}' "$p" 2>/dev/null |
    grep -q 'install ok installed' || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return
  [ "$(id -u)" -eq 0 ] || die "missing Debian packages (${missing[*]}): install them as root"
  log "installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${missing[@]}" >&2; } || die "apt-get install ${missing[*]} failed"
}

have_all() { # dir names...
  local dir=$1; shift
  local name
  for name in "$@"; do [ -x "$dir/$name" ] || return 1; done
}

go_env() {
  # Let Go fetch a newer toolchain from the module proxy when a module asks for one.
  export GOTOOLCHAIN="${DRA_BRIDGE_GOTOOLCHAIN:-auto}"
  export GOFLAGS="-mod=mod -buildvcs=false -trimpath"
  export CGO_ENABLED="${CGO_ENABLED:-0}"
  command -v go >/dev/null || die "the Go toolchain (go) is not on PATH"
}

# Downloads module@version and prints the path of its go.mod file.
gomod_of() {
  local json
  json=$(go mod download -json "$1@$2") || die "cannot download $1@$2 from the module proxy"
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$json"
}

# Prints the module paths that a go.mod replaces with a local directory (./x or ../x).
local_replaces() {
  awk '
    /^replace[[:space:]]*\(/ { block = 1; next }
    block && /^\)/ { block = 0; next }
    {
      line = $0
      if (!block) { if (line !~ /^replace[[:space:]]/) next; sub(/^replace[[:space:]]+/, "", line) }
      n = split(line, f, /[[:space:]]+/)
      for (i = 1; i <= n; i++) if (f[i] == "=>" && f[i + 1] ~ /^\.\.?\//) {
        start = (f[1] == "") ? 2 : 1; print f[start]
      }
    }' "$1" | sort -u
}

# Writes a wrapper go.mod into $1: module $2 requires $3@$4 and every module that $3's go.mod
# replaces with a local directory is replaced by its published twin at $5. Twins the proxy
# does not serve (examples nothing here builds) are replaced by an empty local stub.
write_wrapper() {
  local dir=$1 main=$2 dep=$3 depver=$4 twinver=$5 depmod goline twins=() m json
  depmod=$(gomod_of "$dep" "$depver")
  [ -n "$depmod" ] || die "no go.mod for $dep@$depver"
  goline=$(awk '$1 == "go" { print $2; exit }' "$depmod")
  mapfile -t twins < <(local_replaces "$depmod")
  {
    printf 'module %s\n\ngo %s\n\nrequire %s %s\n\n' "$main" "$goline" "$dep" "$depver"
  } >"$dir/go.mod"
  # One batched download tells which twins exist (and fetches them for the build).
  json=$(go mod download -json "${twins[@]/%/@$twinver}" 2>/dev/null || true)
  for m in "${twins[@]}"; do
    if awk -v m="$m" -v v="$twinver" '
        $0 ~ "\"Path\": \"" m "\"" { hit = 1; next }
        hit && /"Version"/ { if ($0 !~ "\"" v "\"") hit = 0; next }
        hit && /"Error"/ { bad = 1 }
        hit && /^}/ { exit }
        END { exit !(hit && !bad) }' <<<"$json"; then
      printf 'replace %s => %s %s\n' "$m" "$m" "$twinver" >>"$dir/go.mod"
    else
      log "note: $m@$twinver is not on the module proxy; replacing it with an empty stub"
      mkdir -p "$dir/stub/$m"
      printf 'module %s\n\ngo %s\n' "$m" "$goline" >"$dir/stub/$m/go.mod"
      printf 'replace %s => ./stub/%s\n' "$m" "$m" >>"$dir/go.mod"
    fi
  done
  # godebug lines of a dependency are ignored: carry them over so behaviour matches upstream.
  grep -E '^godebug ' "$depmod" >>"$dir/go.mod" || true
  log "wrapper for $dep@$depver: ${#twins[@]} replaced modules"
}

# The -ldflags that make Kubernetes binaries report version $1 (not v0.0.0-master).
k8s_ldflags() {
  local version=$1 minor pkg ld=(-s -w)
  minor=${version#v1.}; minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=("-X $pkg.gitVersion=$version" "-X $pkg.gitMajor=1" "-X $pkg.gitMinor=$minor"
         "-X $pkg.gitTreeState=clean" "-X $pkg.buildDate=1970-01-01T00:00:00Z")
  done
  echo "${ld[*]}"
}

build_k8s() {
  local work
  if have_all "$K8S_DIR" "${K8S_CMDS[@]}"; then
    log "reusing $K8S_DIR"; return
  fi
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-k8s-XXXXXX")
  CLEANUP+=("$work")
  write_wrapper "$work" dra-bridge.local/k8s-build k8s.io/kubernetes "$K8S_VERSION" \
    "v0.${K8S_VERSION#v1.}"
  log "building ${K8S_CMDS[*]} $K8S_VERSION (this takes a while on a cold cache)"
  mkdir -p "$work/out"
  (cd "$work" && nice -n 10 go build -ldflags "$(k8s_ldflags "$K8S_VERSION")" -o "$work/out/" \
    "${K8S_CMDS[@]/#/k8s.io/kubernetes/cmd/}")
  rm -rf "$K8S_DIR.tmp" && mv "$work/out" "$K8S_DIR.tmp" && mv -T "$K8S_DIR.tmp" "$K8S_DIR"
}

build_etcd() {
  local work
  if have_all "$ETCD_DIR" etcd; then
    log "reusing $ETCD_DIR"; return
  fi
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-etcd-XXXXXX")
  CLEANUP+=("$work")
  write_wrapper "$work" dra-bridge.local/etcd-build go.etcd.io/etcd/server/v3 "$ETCD_VERSION" \
    "$ETCD_VERSION"
  log "building etcd $ETCD_VERSION"
  mkdir -p "$work/out"
  (cd "$work" && nice -n 10 go build -ldflags "-s -w" -o "$work/out/etcd" go.etcd.io/etcd/server/v3)
  rm -rf "$ETCD_DIR.tmp" && mv "$work/out" "$ETCD_DIR.tmp" && mv -T "$ETCD_DIR.tmp" "$ETCD_DIR"
}

link_bin_dir() {
  mkdir -p "$BIN_DIR"
  local c
  for c in "${K8S_CMDS[@]}"; do ln -sfn "$K8S_DIR/$c" "$BIN_DIR/$c"; done
  ln -sfn "$ETCD_DIR/etcd" "$BIN_DIR/etcd"
}

cmd_build() {
  if [ -n "${DRA_BRIDGE_K8S_BIN:-}" ]; then
    have_all "$DRA_BRIDGE_K8S_BIN" etcd "${K8S_CMDS[@]}" ||
      die "DRA_BRIDGE_K8S_BIN=$DRA_BRIDGE_K8S_BIN lacks one of: etcd ${K8S_CMDS[*]}"
    log "using DRA_BRIDGE_K8S_BIN=$DRA_BRIDGE_K8S_BIN"; return
  fi
  local start=$SECONDS
  mkdir -p "$DRA_BRIDGE_CACHE"
  # One build at a time per cache (parallel CI jobs, a developer's second shell).
  exec 9>"$DRA_BRIDGE_CACHE/.build.lock"
  flock 9
  if ! have_all "$K8S_DIR" "${K8S_CMDS[@]}" || ! have_all "$ETCD_DIR" etcd; then go_env; fi
  build_etcd
  build_k8s
  link_bin_dir
  log "binaries in $BIN_DIR (build step took $((SECONDS - start))s)"
}

cmd_env() {
  if [ -n "${DRA_BRIDGE_K8S_BIN:-}" ]; then echo "$DRA_BRIDGE_K8S_BIN"; return; fi
  have_all "$BIN_DIR" etcd "${K8S_CMDS[@]}" || die "not built yet: run $0 build"
  echo "$BIN_DIR"
}

# The newest patch releases the module proxy serves (for bumping the pins above).
cmd_latest() {
  local minor=${1:-${K8S_VERSION#v}} etcd_minor=${ETCD_VERSION#v}
  minor=$(cut -d. -f1,2 <<<"$minor"); etcd_minor=$(cut -d. -f1,2 <<<"$etcd_minor")
  go_env
  printf 'k8s.io/kubernetes %s\n' "$(go list -m -versions k8s.io/kubernetes | tr ' ' '\n' |
    grep -E "^v${minor//./\\.}\.[0-9]+$" | sort -V | tail -1)"
  printf 'go.etcd.io/etcd/server/v3 %s\n' "$(go list -m -versions go.etcd.io/etcd/server/v3 |
    tr ' ' '\n' | grep -E "^v${etcd_minor//./\\.}\.[0-9]+$" | sort -V | tail -1)"
}

# Sourced (hack/real-node.sh reuses the helpers above): define, do not run.
[[ "${BASH_SOURCE[0]}" == "$0" ]] || return 0

case "${1:-}" in
  build) cmd_build ;;
  env) cmd_env ;;
  versions) echo "K8S_VERSION=$K8S_VERSION ETCD_VERSION=$ETCD_VERSION" ;;
  latest) cmd_latest "${2:-}" ;;
  *) echo "usage: $0 build|env|versions|latest [1.MINOR]" >&2; exit 2 ;;
esac
