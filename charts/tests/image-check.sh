#!/usr/bin/env bash
# Checks the Dockerfile's runtime stage against the binaries (the image itself
# cannot be built here):
#   1. every shared library `ldd bin/*` resolves belongs (dpkg -S) to a
#      package that the runtime stage installs, that one of those depends on
#      (recursively), or that debian:bookworm-slim has (Essential packages and
#      their dependencies);
#   2. the build stage installs the -dev packages of the Makefile's libraries;
#   3. every package named in the runtime stage exists and is installed here
#      (so its dependencies are known), and none is a -dev package.
# Usage: charts/tests/image-check.sh [Dockerfile] [binaries...]   (default bin/*)
set -euo pipefail
DOCKERFILE=${1:-Dockerfile}
shift || true
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(bin/mkueue-webhook bin/mkueue-reconciler)
fail=0
err() { echo "image-check: $*" >&2; fail=1; }

# apt-get install arguments of the stage starting at FROM line number $1 (to the next FROM)
stage_packages() {
    awk -v from="$1" 'NR >= from && /^FROM / && NR > from { exit } NR >= from { print }' "$DOCKERFILE" |
        sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' | grep 'apt-get install' |
        sed -e 's/.*apt-get install//' -e 's/&&.*//' | tr ' ' '\n' | grep -v '^-' | grep -v '^$' || true
}
froms=($(grep -n '^FROM ' "$DOCKERFILE" | cut -d: -f1))
[ ${#froms[@]} -ge 2 ] || { err "$DOCKERFILE: expected a build and a runtime stage"; exit 1; }
runtime=($(stage_packages "${froms[-1]}"))
build=($(stage_packages "${froms[0]}"))
grep -q '^FROM debian:bookworm-slim' <(sed -n "${froms[-1]}p" "$DOCKERFILE") ||
    err "the runtime stage is not debian:bookworm-slim"
grep -q '^USER [1-9]' "$DOCKERFILE" || err "the runtime stage does not switch to a non-root USER"
[ ${#runtime[@]} -gt 0 ] || err "no apt-get install in the runtime stage"
echo "image-check: runtime packages: ${runtime[*]}"

# dependency closure of a set of packages (installed versions' Depends/Pre-Depends)
closure() {
    declare -A seen=()
    local queue=("$@") p deps d
    while [ ${#queue[@]} -gt 0 ]; do
        p=${queue[0]}; queue=("${queue[@]:1}")
        p=${p%%:*}
        [ -n "$p" ] && [ -z "${seen[$p]:-}" ] || continue
        seen[$p]=1
        deps=$(dpkg-query -W -f '${Depends}, ${Pre-Depends}' "$p" 2>/dev/null || true)
        for d in $(echo "$deps" | tr ',|' '\n\n' | sed -e 's/(.*)//' -e 's/:any//' | tr -d ' '); do
            [ -n "$d" ] && [ -z "${seen[$d]:-}" ] && queue+=("$d")
        done
    done
    printf '%s\n' "${!seen[@]}"
}

for p in "${runtime[@]}"; do
    [[ $p == *-dev ]] && err "runtime stage installs a -dev package: $p"
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        err "runtime package $p is not installed on this Debian machine (misspelt or wrong release?)"
done
essential=($(dpkg-query -W -f '${Package} ${Essential}\n' | awk '$2 == "yes" { print $1 }'))
declare -A provided=()
for p in $(closure "${runtime[@]}" "${essential[@]}"); do provided[$p]=1; done

owner() { # package owning a library path, trying the merged-/usr aliases
    local f=$1 real alt
    real=$(readlink -f "$f")
    for alt in "$f" "$real" "/usr${f#/usr}" "${f#/usr}" "/usr${real#/usr}" "${real#/usr}"; do
        dpkg -S "$alt" 2>/dev/null | head -n1 | cut -d: -f1 && return 0
    done
    return 1
}

for b in "${bins[@]}"; do
    [ -x "$b" ] || { err "$b is missing: run make build"; continue; }
    while read -r lib path; do
        pkg=$(owner "$path") || { err "$b: $lib ($path) belongs to no Debian package"; continue; }
        if [ -n "${provided[$pkg]:-}" ]; then
            echo "image-check: $b: $lib <- $pkg"
        else
            err "$b needs $lib from package $pkg, which the runtime stage does not install"
        fi
    done < <(ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $1 ~ /^\// { print $1, $1 }')
done

# the build stage has the -dev package of each library the Makefile links
for dev in libmicrohttpd-dev libssl-dev libjansson-dev libyajl-dev libcurl4-openssl-dev libyaml-dev build-essential pkg-config; do
    printf '%s\n' "${build[@]}" | grep -qx "$dev" || err "the build stage does not install $dev"
done

[ $fail = 0 ] && echo "image-check: ok (${#bins[@]} binaries)"
exit $fail
