#!/usr/bin/env bash
# Builds cert-manager's controller and cainjector (the chart's cert-manager mode, proven end to
# end by tests/e2e/test_cert_manager_e2e.py) from the Go module proxy with the machine's Go
# toolchain, through a wrapper module as hack/control-plane.sh builds the control plane, and
# takes its CRDs from the same module's deploy/crds/.
#
#   hack/cert-manager.sh build     build what is missing from the cache (reused when present)
#   hack/cert-manager.sh env       print the directory holding controller, cainjector, crds.yaml
#   hack/cert-manager.sh versions  print the pinned version
#
# Cached outside the repository, keyed by version:
#   $DRA_BRIDGE_CACHE/cert-manager-$CERT_MANAGER_VERSION/{controller,cainjector,crds.yaml}
# DRA_BRIDGE_CERT_MANAGER=<dir with all three> skips the build entirely.
#
# Why v1.11.x: the newest release whose cmd/controller and cmd/cainjector are packages of the
# root module github.com/cert-manager/cert-manager. Since v1.12 each sits in its own nested
# module (cmd/controller/go.mod, ...) that is not tagged, so the proxy does not serve it
# (github.com/cert-manager/cert-manager/cmd/controller@v1.12.0: not found) (docs/design.md D50).
set -euo pipefail

CERT_MANAGER_VERSION="${CERT_MANAGER_VERSION:-v1.11.5}"
DRA_BRIDGE_CACHE="${DRA_BRIDGE_CACHE:-$HOME/.cache/dra-bridge}"
CM_MODULE=github.com/cert-manager/cert-manager
CM_DIR="$DRA_BRIDGE_CACHE/cert-manager-$CERT_MANAGER_VERSION"
CM_CMDS=(controller cainjector)

LOG_PREFIX=cert-manager
# shellcheck source=hack/control-plane.sh
. "$(dirname "$0")/control-plane.sh" # helpers only: go_env, write_wrapper, log, die, CLEANUP

have_cert_manager() { # dir
  have_all "$1" "${CM_CMDS[@]}" && [ -s "$1/crds.yaml" ]
}

# deploy/crds/*.yaml are Helm templates only in their metadata.labels (the chart's name and
# release): drop those lines, and the `labels:` key they leave empty. What remains is plain YAML.
plain_crds() { # module dir
  local f
  for f in "$1"/deploy/crds/crd-*.yaml; do
    printf -- '---\n'
    awk '
      /\{\{/ { next }
      held != "" {
        match($0, /^ */); if (RLENGTH > hind) print held; held = ""
      }
      /^ +labels:[[:space:]]*$/ { held = $0; match($0, /^ */); hind = RLENGTH; next }
      { print }' "$f"
  done
}

build_cert_manager() {
  local work dir ld
  work=$(mktemp -d "$DRA_BRIDGE_CACHE/.build-cert-manager-XXXXXX")
  CLEANUP+=("$work")
  write_wrapper "$work" dra-bridge.local/cert-manager-build "$CM_MODULE" "$CERT_MANAGER_VERSION" \
    "$CERT_MANAGER_VERSION"
  dir=$(go mod download -json "$CM_MODULE@$CERT_MANAGER_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -d "$dir/deploy/crds" ] || die "no deploy/crds in $CM_MODULE@$CERT_MANAGER_VERSION"
  mkdir -p "$work/out"
  plain_crds "$dir" >"$work/out/crds.yaml"
  ! grep -q '{{' "$work/out/crds.yaml" || die "templating left in the CRDs of $CERT_MANAGER_VERSION"
  ld="-s -w -X $CM_MODULE/pkg/util.AppVersion=$CERT_MANAGER_VERSION -X $CM_MODULE/pkg/util.AppGitState=clean"
  log "building ${CM_CMDS[*]} $CERT_MANAGER_VERSION (a few minutes on a cold cache)"
  (cd "$work" && nice -n 10 go build -ldflags "$ld" -o "$work/out/" "${CM_CMDS[@]/#/$CM_MODULE/cmd/}")
  "$work/out/controller" --help >/dev/null 2>&1 || die "the built controller does not run"
  rm -rf "$CM_DIR.tmp" && mv "$work/out" "$CM_DIR.tmp" && mv -T "$CM_DIR.tmp" "$CM_DIR"
}

cmd_build() {
  if [ -n "${DRA_BRIDGE_CERT_MANAGER:-}" ]; then
    have_cert_manager "$DRA_BRIDGE_CERT_MANAGER" ||
      die "DRA_BRIDGE_CERT_MANAGER=$DRA_BRIDGE_CERT_MANAGER lacks one of: ${CM_CMDS[*]} crds.yaml"
    log "using DRA_BRIDGE_CERT_MANAGER=$DRA_BRIDGE_CERT_MANAGER"; return
  fi
  local start=$SECONDS
  mkdir -p "$DRA_BRIDGE_CACHE"
  exec 9>"$DRA_BRIDGE_CACHE/.build.lock"
  flock 9
  if have_cert_manager "$CM_DIR"; then
    log "reusing $CM_DIR"
  else
    go_env
    build_cert_manager
  fi
  log "cert-manager in $CM_DIR (build step took $((SECONDS - start))s)"
}

cmd_env() {
  if [ -n "${DRA_BRIDGE_CERT_MANAGER:-}" ]; then echo "$DRA_BRIDGE_CERT_MANAGER"; return; fi
  have_cert_manager "$CM_DIR" || die "not built yet: run $0 build"
  echo "$CM_DIR"
}

case "${1:-}" in
  build) cmd_build ;;
  env) cmd_env ;;
  versions) echo "CERT_MANAGER_VERSION=$CERT_MANAGER_VERSION" ;;
  *) echo "usage: $0 build|env|versions" >&2; exit 2 ;;
esac
