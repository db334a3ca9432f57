#!/usr/bin/env bash
# Builds a whole local cluster from source through the Go module proxy into bin/k8s/<version>/:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a matching kubectl from
# k8s.io/kubernetes, kwok (sigs.k8s.io/kwok), which simulates nodes and the lifecycle of
# their pods, and metrics-server (sigs.k8s.io/metrics-server), which serves the metrics API from
# what kwok says the pods use. Prebuilt binaries are never downloaded: the module proxy is the
# only source. Each binary is built in a throwaway module whose replace lines pin the staging
# modules that the upstream go.mod points at with relative paths. Reuses existing binaries.
#
# Usage: hack/build-control-plane.sh            prints the asset directory on stdout
# Env:   KUBE_VERSION (default 1.37.2), ETCD_VERSION (default 3.7.3), KWOK_VERSION (default 0.8.0),
#        METRICS_SERVER_VERSION (default 0.9.0), LANDLORD_BIN (default ./bin)
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.7.3}
KWOK_VERSION=${KWOK_VERSION:-0.8.0}
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-0.9.0}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${LANDLORD_BIN:-$root/bin}
out=$bin/k8s/$KUBE_VERSION
mkdir -p "$out"

log() { echo "build-control-plane: $*" >&2; }

build_kubernetes() {
  local work staging_minor gomod
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  # Staging modules are tagged v0.<minor>.<patch> for Kubernetes v1.<minor>.<patch>.
  staging_minor="0.${KUBE_VERSION#1.}"
  gomod=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" |
    sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module landlord.local/kube-apiserver-build"
    echo
    echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')"
    echo
    echo "require k8s.io/kubernetes v$KUBE_VERSION"
    echo
    echo "replace ("
    # Every staging module upstream requires at v0.0.0 is pinned to the matching release.
    awk '$1 ~ /^k8s.io\// && $2 == "v0.0.0" {print $1}' "$gomod" | sort -u | while read -r m; do
      echo "	$m => $m v$staging_minor"
    done
    echo ")"
  } >"$work/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n)\n' >"$work/tools.go"
  local ldflags="-s -w"
  local pkg=k8s.io/component-base/version
  ldflags+=" -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  (cd "$work" && GOFLAGS=-mod=mod go mod tidy >&2 &&
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
}

build_etcd() {
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  cat >"$work/go.mod" <<MOD
module landlord.local/etcd-build

go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')

require go.etcd.io/etcd/server/v3 v$ETCD_VERSION

replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 v$ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 v$ETCD_VERSION
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 v$ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 v$ETCD_VERSION
)
MOD
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$work/tools.go"
  (cd "$work" && GOFLAGS=-mod=mod go mod tidy >&2 &&
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
}

build_kwok() {
  # kwok's own go.mod pins what it needs; go install builds it as its release does.
  GOBIN="$out" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
}

build_metrics_server() {
  # Like kwok, its own go.mod pins what it needs.
  GOBIN="$out" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/metrics-server/cmd/metrics-server@v$METRICS_SERVER_VERSION"
}

if [ ! -x "$out/etcd" ]; then
  log "building etcd v$ETCD_VERSION (once; reused afterwards)"
  build_etcd
fi
missing=false
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  [ -x "$out/$b" ] || missing=true
done
if $missing; then
  log "building kube-apiserver, kube-controller-manager, kube-scheduler and kubectl v$KUBE_VERSION (once; reused afterwards)"
  build_kubernetes
fi
if [ ! -x "$out/kwok" ]; then
  log "building kwok v$KWOK_VERSION (once; reused afterwards)"
  build_kwok
fi
if [ ! -x "$out/metrics-server" ]; then
  log "building metrics-server v$METRICS_SERVER_VERSION (once; reused afterwards)"
  build_metrics_server
fi
echo "$out"
