#!/usr/bin/env bash
# Builds the differential oracle (tests/oracle: the upstream DRA allocator library,
# k8s.io/dynamic-resource-allocation pinned in tests/oracle/go.mod) from the Go module proxy.
#
#   hack/oracle.sh build   build it unless the cache already holds this exact source
#   hack/oracle.sh env     print the path of the binary (fails when not built)
#
# The binary is cached outside the repository, keyed by the library version and a hash of
# tests/oracle's go.mod, go.sum and *.go (any change rebuilds, nothing stale is reused):
#   $DRA_BRIDGE_CACHE/alloc-oracle-$DRA_VERSION-$HASH/alloc-oracle
# DRA_BRIDGE_ORACLE=<binary> skips the build (its path is what `env` prints).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/control-plane.sh
. "$HERE/control-plane.sh"
LOG_PREFIX=oracle
SRC="$HERE/../tests/oracle"

DRA_VERSION=$(awk '$1 == "k8s.io/dynamic-resource-allocation" { print $2; exit }' "$SRC/go.mod")
[ -n "$DRA_VERSION" ] || die "tests/oracle/go.mod does not require k8s.io/dynamic-resource-allocation"
HASH=$(cd "$SRC" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)
ORACLE_DIR="$DRA_BRIDGE_CACHE/alloc-oracle-$DRA_VERSION-$HASH"
ORACLE="$ORACLE_DIR/alloc-oracle"

cmd_build() {
  if [ -n "${DRA_BRIDGE_ORACLE:-}" ]; then
    [ -x "$DRA_BRIDGE_ORACLE" ] || die "DRA_BRIDGE_ORACLE=$DRA_BRIDGE_ORACLE is not an executable"
    log "using DRA_BRIDGE_ORACLE=$DRA_BRIDGE_ORACLE"; return
  fi
  mkdir -p "$DRA_BRIDGE_CACHE"
  exec 9>"$DRA_BRIDGE_CACHE/.build.lock"
  flock 9
  if [ -x "$ORACLE" ]; then log "reusing $ORACLE"; return; fi
  go_env
  local work start=$SECONDS
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-oracle-XXXXXX")
  CLEANUP+=("$work")
  # Built from a copy: -mod=mod may touch go.mod/go.sum, never in the working tree.
  cp "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go "$work/"
  mkdir -p "$work/out"
  log "building the allocator oracle (k8s.io/dynamic-resource-allocation $DRA_VERSION)"
  (cd "$work" && nice -n 10 go build -ldflags "-s -w" -o "$work/out/alloc-oracle" .)
  rm -rf "$ORACLE_DIR.tmp" && mv "$work/out" "$ORACLE_DIR.tmp" && mv -T "$ORACLE_DIR.tmp" "$ORACLE_DIR"
  log "built $ORACLE in $((SECONDS - start))s"
}

cmd_env() {
  if [ -n "${DRA_BRIDGE_ORACLE:-}" ]; then echo "$DRA_BRIDGE_ORACLE"; return; fi
  [ -x "$ORACLE" ] || die "not built yet: run $0 build"
  echo "$ORACLE"
}

case "${1:-}" in
  build) cmd_build ;;
  env) cmd_env ;;
  *) echo "usage: $0 build|env" >&2; exit 2 ;;
esac
