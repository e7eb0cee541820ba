#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager 1.20.2 from Debian's
# kubernetes source package with Go 1.15 (bullseye), and caches them outside
# the repo, keyed by version. A Go >= 1.18 build segfaults on the first
# custom-resource request (vendored reflect2 1.0.1), hence the old toolchain.
# Prints the folder holding both binaries.
set -euo pipefail

VERSION=1.20.2
CACHE=${MKUEUE_CACHE:-/var/cache/mkueue}
OUT="$CACHE/kube-$VERSION"
log() { echo "build-kube: $*" >&2; }

if [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/kube-controller-manager" ]; then
  echo "$OUT"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
src=/etc/apt/sources.list.d/mkueue-build.sources
if [ ! -f "$src" ]; then
  log "adding bookworm deb-src and a low-pinned bullseye source for golang-1.15-go"
  cat >"$src" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian
Suites: bullseye
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  cat >/etc/apt/preferences.d/mkueue-bullseye <<'PIN'
Package: *
Pin: release n=bullseye
Pin-Priority: 100
PIN
  apt-get update -qq
fi
need=()
dpkg -s golang-1.15-go >/dev/null 2>&1 || need+=(golang-1.15-go/bullseye)
for p in rsync jq dpkg-dev; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get install -y -qq "${need[@]}" >&2
fi
GO_BIN=$(dirname "$(dpkg -L golang-1.15-go | grep '/bin/go$' | head -n1)")

work="$CACHE/build-$VERSION"
rm -rf "$work"
mkdir -p "$work"
cd "$work"
log "fetching the kubernetes source package"
apt-get source --download-only kubernetes >&2
tarball=$(ls kubernetes_*.orig.tar.gz | head -n1)
mkdir tree
tar -xzf "$tarball" -C tree --strip-components=1
cd tree
mkdir -p .go/src/k8s.io
ln -s ../../.. .go/src/k8s.io/kubernetes
cd .go/src/k8s.io/kubernetes
log "building (about 15 minutes on 2 cores)"
GOPATH="$work/tree/.go" CGO_ENABLED=0 PATH="$GO_BIN:$PATH" \
  make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >&2
mkdir -p "$OUT.tmp"
cp _output/local/bin/linux/amd64/kube-apiserver _output/local/bin/linux/amd64/kube-controller-manager "$OUT.tmp/"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
cd /
rm -rf "$work"
log "cached in $OUT"
echo "$OUT"
