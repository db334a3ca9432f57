#!/usr/bin/env bash
# Builds a Go tool from the Go module proxy into bin/ under a versioned name, once:
#
#   hack/go-install-tool.sh PACKAGE VERSION OUTPUT   e.g. github.com/rhysd/actionlint/cmd/actionlint v1.7.12 bin/actionlint-v1.7.12
#
# bin/ may be shared between checkouts: the tool is built in a directory of its own and moved
# into place under its versioned name, so a half-built binary never takes that name and no other
# file in bin/ is touched.
set -euo pipefail
package="${1:?usage: $0 PACKAGE VERSION OUTPUT}"
version="${2:?usage: $0 PACKAGE VERSION OUTPUT}"
output="${3:?usage: $0 PACKAGE VERSION OUTPUT}"
[[ -x "$output" ]] && exit 0
mkdir -p "$(dirname "$output")"
gobin="$(mktemp -d "$(cd "$(dirname "$output")" && pwd)/.build.XXXXXX")"
trap 'rm -rf "$gobin"' EXIT
# Outside this module, so the tool's own go.mod and go.sum pin its dependencies.
(cd "$gobin" && CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS=-trimpath go install "$package@$version")
# The binary is named for the package's last element, or the one before a major version (/v2).
name="$(basename "$package")"
[[ "$name" =~ ^v[0-9]+$ ]] && name="$(basename "$(dirname "$package")")"
mv "$gobin/$name" "$output"
echo "built $output"
