#!/usr/bin/env bash
# Writes the release installer: config/default with the operator's image set, as one file for
# `kubectl apply --server-side -f` (CRDs, RBAC, admission policies, configuration, Deployment).
#
#   hack/build-installer.sh IMAGE OUTPUT      e.g. registry.example.com/landlord:v0.2.0 dist/install.yaml
#
# The build is kustomize's own library (hack/kustomize): no kubectl and no Kubernetes build is
# needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
image="${1:?usage: $0 IMAGE OUTPUT}"
output="${2:?usage: $0 IMAGE OUTPUT}"

# IMAGE is name[:tag] or name@digest; a registry's port (localhost:5000/landlord) is no tag.
name="$image" tag="" digest=""
if [[ "$image" == *@* ]]; then
  name="${image%@*}" digest="${image#*@}"
elif [[ "${image##*/}" == *:* ]]; then
  name="${image%:*}" tag="${image##*:}"
else
  tag=latest
fi

# A throwaway overlay over config/default, so config/ itself keeps the release's image
# (config/manager/manager.yaml names it). It sits
# in dist/ (git-ignored) because kustomize takes a base by a relative path only.
mkdir -p "$root/dist"
overlay="$(mktemp -d "$root/dist/.installer.XXXXXX")"
trap 'rm -rf "$overlay"' EXIT
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources: [../../config/default]"
  echo "images:"
  echo "  - name: ghcr.io/landlord-dev/landlord"
  echo "    newName: \"$name\""
  [[ -n "$tag" ]] && echo "    newTag: \"$tag\""
  [[ -n "$digest" ]] && echo "    digest: \"$digest\""
} >"$overlay/kustomization.yaml"

mkdir -p "$(dirname "$output")"
{
  echo "# Landlord installer for image $image: kubectl apply --server-side -f install.yaml"
  echo "# Generated from config/default by hack/build-installer.sh (make build-installer)."
  (cd "$root" && go run ./hack/kustomize "$overlay")
} >"$output.tmp"
mv "$output.tmp" "$output"
echo "wrote $output ($image)"
