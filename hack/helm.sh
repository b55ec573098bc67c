#!/usr/bin/env bash
# Builds Helm (the chart's lint and render tests, and users' installs) from the Go module proxy
# with the machine's Go toolchain, pinned and cached by version like hack/control-plane.sh.
#
#   hack/helm.sh build      build both pinned versions when missing (reused when present)
#   hack/helm.sh env [3|4]  print the directory holding `helm` of Helm 4 (default) or Helm 3
#   hack/helm.sh versions   print the pinned versions
#   hack/helm.sh latest     newest releases on the module proxy (for bumping the pins)
#
# Binaries are cached outside the repository, keyed by version:
#   $DRA_BRIDGE_CACHE/helm-$HELM4_VERSION/helm   $DRA_BRIDGE_CACHE/helm-$HELM3_VERSION/helm
# DRA_BRIDGE_HELM4 / DRA_BRIDGE_HELM3=<path of a helm binary> skip the build of that version.
set -euo pipefail

# Helm 4 is the current major; Helm 3 stays for users who have not moved (it renders the same
# chart: apiVersion v2 charts are read by both).
HELM4_VERSION="${HELM4_VERSION:-v4.3.1}"
HELM3_VERSION="${HELM3_VERSION:-v3.22.0}"
DRA_BRIDGE_CACHE="${DRA_BRIDGE_CACHE:-$HOME/.cache/dra-bridge}"

log() { printf '[helm] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
WORK=""
trap '[ -z "$WORK" ] || rm -rf "$WORK"' EXIT

go_env() {
  export GOTOOLCHAIN="${DRA_BRIDGE_GOTOOLCHAIN:-auto}"
  export GOFLAGS="-mod=mod -buildvcs=false -trimpath"
  export CGO_ENABLED=0
  command -v go >/dev/null || die "the Go toolchain (go) is not on PATH"
}

# The k8s.io/client-go version a Helm release requires (Helm 3 reports it as its default
# Capabilities.KubeVersion only when told at link time; Helm 4 reads it from the build info).
client_go_minor() { # module version
  local gomod
  gomod=$(go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [ -n "$gomod" ] || die "cannot download $1@$2 from the module proxy"
  awk '$1 == "k8s.io/client-go" { v = $2; sub(/^v0\./, "", v); sub(/\..*/, "", v); print v; exit }' "$gomod"
}

build_one() { # major version
  local major=$1 version=$2 dir="$DRA_BRIDGE_CACHE/helm-$2" mod="helm.sh/helm/v$1" ld minor
  if [ -x "$dir/helm" ]; then log "reusing $dir"; return; fi
  go_env
  ld="-s -w -X $mod/internal/version.version=$version -X $mod/internal/version.metadata="
  ld+=" -X $mod/internal/version.gitTreeState=clean"
  if [ "$major" = 3 ]; then
    minor=$(client_go_minor "$mod" "$version")
    [ -n "$minor" ] || die "no k8s.io/client-go requirement in $mod@$version's go.mod"
    for pkg in pkg/lint/rules pkg/chartutil; do
      ld+=" -X $mod/$pkg.k8sVersionMajor=1 -X $mod/$pkg.k8sVersionMinor=$minor"
    done
  fi
  WORK=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-helm-XXXXXX")
  log "building helm $version (a minute or two on a cold cache)"
  # `go install module@version` builds with the release's own go.mod (Helm has no replaces).
  GOBIN="$WORK/out" nice -n 10 go install -ldflags "$ld" "$mod/cmd/helm@$version"
  "$WORK/out/helm" version --short >/dev/null || die "the built helm $version does not run"
  rm -rf "$dir.tmp" && mv "$WORK/out" "$dir.tmp" && mv -T "$dir.tmp" "$dir"
  rm -rf "$WORK"; WORK=""
}

cmd_build() {
  mkdir -p "$DRA_BRIDGE_CACHE"
  exec 9>"$DRA_BRIDGE_CACHE/.build-helm.lock"
  flock 9
  local start=$SECONDS
  [ -n "${DRA_BRIDGE_HELM4:-}" ] || build_one 4 "$HELM4_VERSION"
  [ -n "${DRA_BRIDGE_HELM3:-}" ] || build_one 3 "$HELM3_VERSION"
  log "helm in $(cmd_env 4) and $(cmd_env 3) (build step took $((SECONDS - start))s)"
}

cmd_env() {
  local major=${1:-4} override version
  case "$major" in
    4) override=${DRA_BRIDGE_HELM4:-}; version=$HELM4_VERSION ;;
    3) override=${DRA_BRIDGE_HELM3:-}; version=$HELM3_VERSION ;;
    *) die "unknown Helm major version: $major (3 or 4)" ;;
  esac
  if [ -n "$override" ]; then
    [ -x "$override" ] || die "DRA_BRIDGE_HELM$major=$override is not an executable"
    dirname "$override"; return
  fi
  [ -x "$DRA_BRIDGE_CACHE/helm-$version/helm" ] || die "helm $version not built yet: run $0 build"
  echo "$DRA_BRIDGE_CACHE/helm-$version"
}

cmd_latest() {
  go_env
  local m
  for m in 4 3; do
    printf 'helm.sh/helm/v%s %s\n' "$m" "$(go list -m -versions "helm.sh/helm/v$m" | tr ' ' '\n' |
      grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | sort -V | tail -1)"
  done
}

case "${1:-}" in
  build) cmd_build ;;
  env) cmd_env "${2:-4}" ;;
  versions) echo "HELM4_VERSION=$HELM4_VERSION HELM3_VERSION=$HELM3_VERSION" ;;
  latest) cmd_latest ;;
  *) echo "usage: $0 build|env [3|4]|versions|latest" >&2; exit 2 ;;
esac
