#!/usr/bin/env bash
# Fetches Prometheus's promtool (the chart's alert rules: `promtool check rules` and `promtool
# test rules`) from Debian's `prometheus` package, and the prometheus-operator CRDs (the
# ServiceMonitor, PodMonitor and PrometheusRule the chart renders: dry runs on the test API
# server) from the Go module proxy, both cached outside the repository.
#
#   hack/promtool.sh build   fetch what is missing from the cache (reused when present)
#   hack/promtool.sh env     print the path of promtool (fails when not fetched)
#   hack/promtool.sh crds    print the directory of the operator's CRDs (fails when not fetched)
#   hack/promtool.sh versions print the pinned operator version and the packaged promtool's
#
# Cached, keyed by version:
#   $DRA_BRIDGE_CACHE/promtool-$DEB_VERSION/promtool   (`apt-get download` + `dpkg-deb -x`:
#     the package's other files are dropped; `go install` refuses Prometheus's module)
#   $DRA_BRIDGE_CACHE/prometheus-operator-crd-$OPERATOR_VERSION/*.yaml
# DRA_BRIDGE_PROMTOOL=<binary> skips the package; DRA_BRIDGE_OPERATOR_CRDS=<dir> the module.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/control-plane.sh
. "$HERE/control-plane.sh"
LOG_PREFIX=promtool
# The newest release the module proxy serves (`go list -m -versions` lists it).
OPERATOR_VERSION="${OPERATOR_VERSION:-v0.85.0}"
OPERATOR_MODULE=github.com/prometheus-operator/prometheus-operator
CRDS_DIR="$DRA_BRIDGE_CACHE/prometheus-operator-crd-$OPERATOR_VERSION"
CRDS=(servicemonitors podmonitors prometheusrules)

deb_version() { # the candidate version of Debian's prometheus package
  apt-cache policy prometheus 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }'
}

build_promtool() {
  if [ -n "${DRA_BRIDGE_PROMTOOL:-}" ]; then
    [ -x "$DRA_BRIDGE_PROMTOOL" ] || die "DRA_BRIDGE_PROMTOOL=$DRA_BRIDGE_PROMTOOL is not an executable"
    return
  fi
  local version dir work
  version=$(deb_version)
  if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    apt-get update -q >&2 || true
    version=$(deb_version)
  fi
  [ -n "$version" ] && [ "$version" != "(none)" ] || die "apt-cache knows no prometheus package"
  dir="$DRA_BRIDGE_CACHE/promtool-${version//[^A-Za-z0-9.+-]/_}"
  if [ -x "$dir/promtool" ]; then log "reusing $dir"; return; fi
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-promtool-XXXXXX")
  CLEANUP+=("$work")
  log "fetching Debian's prometheus $version (promtool only)"
  # The _apt sandbox user cannot write to a root-owned mktemp directory: say nothing about it.
  (cd "$work" && apt-get download -q "prometheus=$version" >&2 2>/dev/null) ||
    die "apt-get download prometheus=$version failed"
  dpkg-deb -x "$work"/prometheus_*.deb "$work/x"
  mkdir -p "$work/out" && mv "$work/x/usr/bin/promtool" "$work/out/promtool"
  "$work/out/promtool" --version >/dev/null || die "the packaged promtool does not run"
  rm -rf "$dir.tmp" && mv "$work/out" "$dir.tmp" && mv -T "$dir.tmp" "$dir"
  ln -sfn "$(basename "$dir")" "$DRA_BRIDGE_CACHE/promtool-current"
}

build_crds() {
  [ -z "${DRA_BRIDGE_OPERATOR_CRDS:-}" ] || return 0
  if [ -d "$CRDS_DIR" ]; then log "reusing $CRDS_DIR"; return; fi
  go_env
  local json src name work
  json=$(go mod download -json "$OPERATOR_MODULE@$OPERATOR_VERSION") ||
    die "cannot download $OPERATOR_MODULE@$OPERATOR_VERSION from the module proxy"
  src=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
  [ -d "$src/example/prometheus-operator-crd" ] || die "no example/prometheus-operator-crd in $src"
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-crds-XXXXXX")
  CLEANUP+=("$work")
  for name in "${CRDS[@]}"; do
    cp "$src/example/prometheus-operator-crd/monitoring.coreos.com_$name.yaml" "$work/"
  done
  chmod -R u+w,go+rX "$work"
  rm -rf "$CRDS_DIR.tmp" && mv "$work" "$CRDS_DIR.tmp" && mv -T "$CRDS_DIR.tmp" "$CRDS_DIR"
  log "operator CRDs in $CRDS_DIR"
}

cmd_build() {
  mkdir -p "$DRA_BRIDGE_CACHE"
  exec 9>"$DRA_BRIDGE_CACHE/.build-promtool.lock"
  flock 9
  build_promtool
  build_crds
}

cmd_env() {
  if [ -n "${DRA_BRIDGE_PROMTOOL:-}" ]; then echo "$DRA_BRIDGE_PROMTOOL"; return; fi
  local tool="$DRA_BRIDGE_CACHE/promtool-current/promtool"
  [ -x "$tool" ] || die "promtool not fetched yet: run $0 build"
  echo "$tool"
}

cmd_crds() {
  local dir=${DRA_BRIDGE_OPERATOR_CRDS:-$CRDS_DIR}
  [ -d "$dir" ] || die "operator CRDs not fetched yet: run $0 build"
  echo "$dir"
}

case "${1:-}" in
  build) cmd_build ;;
  env) cmd_env ;;
  crds) cmd_crds ;;
  versions) echo "OPERATOR_VERSION=$OPERATOR_VERSION PROMETHEUS_DEB=$(deb_version)" ;;
  *) echo "usage: $0 build|env|crds|versions" >&2; exit 2 ;;
esac
