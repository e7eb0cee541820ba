#!/usr/bin/env bash
# make bench-webhook: build/wh-bench with Kueue's own job webhook beside
# mkueue's and the static floor, figures to build/bench/webhook.json.
#
# Two runs when this script brings the bed up itself: first mkueue and the
# floor on the quiet machine, before the bed exists (build/bench/
# webhook-quiet.json: what issue 15's webhook goals are read against), then
# all three beside the idle bed, which Kueue's webhook needs. The bed's
# three control planes, idle, keep 10 to 20% of 2 cores busy in bursts:
# every server's p99 at 1000/s, the floor's too, was 3 to 4 ms beside it
# and under 1 ms without it (session 30). A bed already running: the
# second run only.
#
# Kueue: the real controller-manager of the test bed's worker-1 (its
# webhooks on loopback, e2e/testbed.sh), answering the same Job
# AdmissionReview at /mutate-batch-v1-job and /validate-batch-v1-job. Its
# webhook looks the Job's LocalQueue up, so e2e/manifests/worker.yaml
# (namespace ml-demo, ClusterQueue team-a-cq, LocalQueue team-a) is applied
# there first. A bed already running with the caller's MKUEUE_* settings is
# used and left running; else one is brought up for the run and taken down
# after it.
#
# Settings (environment):
#   MKUEUE_BENCH_KUEUE=0      no Kueue column (no bed)
#   MKUEUE_BENCH_KUEUE_URL    Kueue's webhook server (https://host:port) to use
#                             instead of the bed's, with MKUEUE_BENCH_KUEUE_CA
#                             (its CA file) and optionally MKUEUE_BENCH_KUEUE_PID
#                             (its RSS); worker.yaml must be applied there
#   MKUEUE_E2E_DIR, MKUEUE_*_PORT, MKUEUE_PORT_BASE   the bed's (e2e/testbed.sh)
#   WH_BENCH_ARGS             more wh-bench arguments (e.g. --duration 5)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
mkdir -p build/bench
args=(--webhook bin/mkueue-webhook --json build/bench/webhook.json)
export MKUEUE_TEST_DATA=$ROOT/common/tests/data
log() { echo "bench-webhook: $*" >&2; }

# Percent of all cores busy over the next `secs` seconds (/proc/stat).
busy_pct() {
    local secs=$1 a b
    read -ra a < <(head -1 /proc/stat)
    sleep "$secs"
    read -ra b < <(head -1 /proc/stat)
    local busy=$(((b[1] + b[2] + b[3] + b[6] + b[7]) - (a[1] + a[2] + a[3] + a[6] + a[7])))
    local idle=$(((b[4] + b[5]) - (a[4] + a[5])))
    echo $((100 * busy / (busy + idle > 0 ? busy + idle : 1)))
}

# A bed just brought up builds its OpenAPI, establishes CRDs and syncs
# Kueue's caches for a minute or so: the three webhooks are measured after
# that, on the idle bed (2 to 4% of 2 cores), not in it. At most 120 s.
settle() {
    local t0=$SECONDS pct
    while pct=$(busy_pct 3) && [ "$pct" -gt 10 ] && [ $((SECONDS - t0)) -lt 120 ]; do :; done
    log "the machine was ${pct}% busy over 3 s after $((SECONDS - t0)) s of settling"
}

quiet=build/bench/webhook-quiet.json
rm -f "$quiet" # a figure of an earlier run is not this run's
started=0
cleanup() {
    if [ "$started" = 1 ]; then e2e/testbed.sh down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

title="webhook (no test bed)"
if [ -n "${MKUEUE_BENCH_KUEUE_URL:-}" ]; then
    title="webhook, beside the Kueue of MKUEUE_BENCH_KUEUE_URL"
    args+=(--kueue-url "$MKUEUE_BENCH_KUEUE_URL" --kueue-ca "${MKUEUE_BENCH_KUEUE_CA:?with MKUEUE_BENCH_KUEUE_URL}")
    [ -n "${MKUEUE_BENCH_KUEUE_PID:-}" ] && args+=(--kueue-pid "$MKUEUE_BENCH_KUEUE_PID")
elif [ "${MKUEUE_BENCH_KUEUE:-1}" != 0 ]; then
    DIR=${MKUEUE_E2E_DIR:-/tmp/mkueue-e2e}
    state=$(e2e/testbed.sh status 2>&1 || true)
    if [[ $state != *"testbed: running"* ]]; then
        log "mkueue and the floor on the quiet machine, before the bed is up"
        # shellcheck disable=SC2086 # WH_BENCH_ARGS is a list of arguments
        build/wh-bench --webhook bin/mkueue-webhook --json "$quiet" --no-hardening \
            --title "webhook, quiet machine (no test bed)" ${WH_BENCH_ARGS:-}
        log "bringing up the test bed for Kueue's webhook (state in $DIR)"
        started=1
        e2e/testbed.sh up
    fi
    title="webhook, beside the $([ "$started" = 1 ] && echo idle || echo running) test bed"
    BED=$(e2e/scripts/build-testbed.sh)
    "$BED/bin/kubectl" --kubeconfig "$DIR/kubeconfig/worker-1.yaml" apply \
        -f e2e/manifests/worker.yaml >/dev/null
    # e2e/testbed.sh's ctl_port: Kueue's webhook on worker-1
    port=$((${MKUEUE_PORT_BASE:-19400} + 11))
    pid=$(awk '$2 == "kueue-worker-1" {print $1}' "$DIR/pids")
    args+=(--kueue-url "https://127.0.0.1:$port" --kueue-ca "$DIR/pki/worker-1/ca.crt")
    [ -n "$pid" ] && args+=(--kueue-pid "$pid")
    settle
fi
args+=(--title "$title")
# shellcheck disable=SC2086 # WH_BENCH_ARGS is a list of arguments
build/wh-bench "${args[@]}" ${WH_BENCH_ARGS:-}
