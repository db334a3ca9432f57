#!/usr/bin/env bash
# Writes a release of Landlord into dist/ (make release):
#
#   hack/release.sh VERSION [DIGEST]     e.g. v0.1.0 sha256:0123...
#
#   install.yaml         config/default for kubectl apply --server-side, the image by tag, and by
#                        tag and digest when DIGEST (the pushed image's) is given
#   crds.yaml            the CRDs alone (config/crd)
#   landlord-X.Y.Z.tgz   the Helm chart (helm package)
#   landlordctl_X.Y.Z_<os>_<arch>.tar.gz, kubectl-landlord_X.Y.Z_<os>_<arch>.tar.gz
#                        the CLI and the kubectl plugin, linux and darwin, amd64 and arm64
#                        (GoReleaser, .goreleaser.yaml)
#   *.cdx.json           a CycloneDX SBOM per binary
#   checksums.txt        SHA-256 of all of the above
#   krew/landlord.yaml   the krew plugin manifest
#   release-notes.md     CHANGELOG.md's section for VERSION
#
# VERSION must be the file VERSION's: every file that names the release names that one
# (hack/release, make set-version). Nothing is downloaded but Go modules, and nothing needs a
# Kubernetes build. The same commit gives the same bytes: the times inside every archive are
# SOURCE_DATE_EPOCH (default: the commit's time).
#
# Tools, built into bin/ by the Makefile: GORELEASER, CYCLONEDX_GOMOD, HELM. Also read:
# RELEASE_IMAGE (ghcr.io/landlord-dev/landlord), COMMIT (git rev-parse HEAD), SOURCE_DATE_EPOCH.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
version="${1:?usage: $0 VERSION [DIGEST]}"
digest="${2:-}"
: "${GORELEASER:?set GORELEASER to the path of goreleaser, as make release does}"
: "${CYCLONEDX_GOMOD:?set CYCLONEDX_GOMOD to the path of cyclonedx-gomod, as make release does}"
: "${HELM:?set HELM to the path of helm, as make release does}"
image="${RELEASE_IMAGE:-ghcr.io/landlord-dev/landlord}"

# Refuses a VERSION other than the file's, a version that is not vX.Y.Z, a DIGEST that is not
# sha256:<64 hex>, and a checkout whose files name another version than VERSION.
go run ./hack/release check -version "$version" -digest "$digest"

export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
export SOURCE_DATE LANDLORD_VERSION="$version" LANDLORD_COMMIT="${COMMIT:-$(git rev-parse HEAD)}"
SOURCE_DATE="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"

# What GoReleaser does not build goes to a directory of its own first (GoReleaser empties
# dist/), from which GoReleaser checksums it with the rest. GoReleaser's globs take a path
# relative to the checkout, so it sits there (git-ignored).
export RELEASE_ASSETS
RELEASE_ASSETS="$(mktemp -d .release-assets.XXXXXX)"
tools="$(mktemp -d)"
trap 'rm -rf "$RELEASE_ASSETS" "$tools"' EXIT

ref="$image:$version"
[[ -n "$digest" ]] && ref="$ref@$digest"
hack/build-installer.sh "$ref" "$RELEASE_ASSETS/install.yaml"
{
  echo "# Landlord $version's CRDs, for kubectl apply --server-side -f crds.yaml (install.yaml holds them too)."
  go run ./hack/kustomize config/crd
} >"$RELEASE_ASSETS/crds.yaml"
"$HELM" package charts/landlord --destination "$RELEASE_ASSETS" >/dev/null
# helm package stamps each file with the time of packaging; the release's time replaces it.
go run ./hack/release normalize-chart "$RELEASE_ASSETS/landlord-${version#v}.tgz"

# GoReleaser runs the SBOM tool by name.
ln -s "$CYCLONEDX_GOMOD" "$tools/cyclonedx-gomod"
PATH="$tools:$PATH" "$GORELEASER" release --snapshot --clean
cp "$RELEASE_ASSETS"/* dist/
go run ./hack/release notes -version "$version" >dist/release-notes.md
echo "wrote dist/ for Landlord $version ($ref)"
