#!/usr/bin/env bats
# Timers on the monotonic clock (docs/design.md, invariant 6): a wall
# clock stepped back an hour stalls neither the Lease's renewal, nor the
# worker probes, nor the ticker (garbage collection), and jobs keep being
# dispatched. The leader runs under build/fakeclock.so (e2e/fakeclock, a
# stand-in: the machine's own clock is never stepped in tests): once the
# scenario writes 3600 to its offset file, the process reads CLOCK_REALTIME
# an hour ahead of the kernel, so a deadline it computes from the wall clock
# and hands to a CLOCK_REALTIME wait lasts an hour longer, as after a real
# step back; CLOCK_MONOTONIC is untouched. worker-2's API server sits behind
# e2e/scripts/lease-proxy.py (nothing held), whose request log shows the
# probes (GET /version). Not in e2e-asan: the shim would be preloaded ahead
# of ASan's runtime.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 48))
PS=$((RC_METRICS_BASE + 49)) # the standby
PP=$((RC_METRICS_BASE + 50)) # lease-proxy.py in front of worker-2
LEASE=rc-wallclock-test
FLAGS=(--gc-interval 2s --probe-interval 1s --lease-name "$LEASE" --lease-duration 8s
       --renew-deadline 6s --retry-period 1s)

setup_file() {
    rc_bed_setup
    make -s -C "$MKUEUE_ROOT" build/fakeclock.so >/dev/null
    export OFFSET=$BATS_FILE_TMPDIR/clock-offset
    echo 0 >"$OFFSET"
    rc_proxy clock-proxy worker-2 "$PP"
    rc_secret worker-2 "$PROXY_KC"
    km -n mkueue-system delete lease "$LEASE" --ignore-not-found >/dev/null
    start_component rc-clock env LD_PRELOAD="$MKUEUE_ROOT/build/fakeclock.so" \
        FAKECLOCK_FILE="$OFFSET" "$RC_BIN" --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/manager.yaml" \
        --metrics-addr "127.0.0.1:$PORT" "${FLAGS[@]}" --identity rc-clock
    eventually 30 curl -sf "http://127.0.0.1:$PORT/readyz" -o /dev/null
}

teardown_file() {
    stop_component rc-clock
    stop_component rc-standby
    stop_component clock-proxy
    rc_secret worker-2 "$MKUEUE_E2E_DIR/kubeconfig/worker-2.yaml"
    km -n mkueue-system delete lease "$LEASE" --ignore-not-found >/dev/null
}

setup() {
    NS=$(fresh_ns rcclock)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

lease() { jp manager -n mkueue-system lease "$LEASE" -o jsonpath="{.spec.$1}"; }
renew_s() { date -d "$(lease renewTime)" +%s; }
# the last renewal was written from a wall clock at least 50 min ahead
renewed_ahead() { [ "$(renew_s)" -gt $(($(date +%s) + 3000)) ]; }
renewed_since() { local r; r=$(lease renewTime); [ -n "$r" ] && [ "$r" != "$1" ]; }
# probes of worker-2 (GET /version) the proxy forwarded after real time $1
probes_since() {
    jq -s --argjson t "$1" \
        'map(select(.path == "/version" and .action == "forward" and .t > $t)) | length' "$PROXY_LOG"
}
at_least() { [ "$("${@:2}")" -ge "$1" ]; }
orphan_gone() { [ -z "$(jp worker-1 -n "$NS" workload rc-orphan -o name)" ]; }

@test "a wall clock stepped back an hour: the lease is renewed, workers probed, orphans collected, jobs dispatched" {
    eventually 30 is_eq rc-clock lease holderIdentity
    eventually 10 is_eq 1 rc_metric "$PORT" mkueue_leader
    local transitions t0 r
    transitions=$(lease leaseTransitions)
    t0=$(date +%s.%N)
    echo 3600 >"$OFFSET"

    # The stand-in is in effect: renewals carry the leader's wall clock, an
    # hour ahead. And they go on: two more after the first such one.
    eventually 20 renewed_ahead
    r=$(lease renewTime)
    eventually 20 renewed_since "$r"
    r=$(lease renewTime)
    eventually 20 renewed_since "$r"
    eq rc-clock "$(lease holderIdentity)"
    eq "$transitions" "$(lease leaseTransitions)"
    eq 1 "$(rc_metric "$PORT" mkueue_leader)"

    # the probes go on (one a second)
    eventually 30 at_least 5 probes_since "$t0"
    eq True "$(mkc_active worker-1)"
    eq True "$(mkc_active worker-2)"
    eq 1 "$(rc_metric "$PORT" 'mkueue_cluster_connected{cluster="worker-1"}')"
    eq 1 "$(rc_metric "$PORT" 'mkueue_cluster_connected{cluster="worker-2"}')"

    # the ticker goes on: an orphaned copy made now is garbage-collected
    rc_orphan_wl worker-1 "$NS"
    eventually 30 orphan_gone

    # and the leader dispatches a new job
    rc_job "$NS" after
    eventually 30 is_ready "$NS" after
    eq 1 "$(rc_count_remote_jobs "$NS")"

    # A renewTime an hour ahead holds no standby back: it counts the lease
    # duration from when it last saw the Lease change (as client-go does),
    # never from renewTime, so it takes over once the leader is gone.
    rc_start rc-standby "$PS" "${FLAGS[@]}" --identity rc-standby
    stop_component rc-clock KILL
    eventually 30 is_eq rc-standby lease holderIdentity
}
