#!/usr/bin/env bash
# Runs the end-to-end scenarios (e2e/tests/*.bats, through prove) against the
# three local clusters (testbed.sh). Brings the test bed up and always tears it down,
# unless MKUEUE_E2E_KEEP=1. Pass scenario files to run a subset.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export MKUEUE_ROOT=$ROOT

cleanup() {
    local rc=$?
    # components a scenario left running (e.g. after a crash of bats itself)
    for f in "${MKUEUE_E2E_DIR:-/nonexistent}"/run/*.pid; do
        [ -e "$f" ] && kill -KILL -- "-$(cat "$f")" 2>/dev/null; rm -f "$f"
    done
    [ "${MKUEUE_E2E_KEEP:-0}" = 1 ] || "$HERE/testbed.sh" down || true
    exit $rc
}
trap cleanup EXIT INT TERM

"$HERE/testbed.sh" up
eval "$("$HERE/testbed.sh" env)" # KUBECONFIG, and the bed's kubectl and helm on PATH

tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=("$HERE"/tests/*.bats)
prove --verbose --timer -e 'bats --tap' "${tests[@]}"
