#!/usr/bin/env bats
# Two reconcilers with leader election on a Lease: one leads and writes,
# the other waits; failover after the leader dies (SIGKILL: within the
# lease duration) or stops (SIGTERM: the lease is released at once); a
# leader whose Lease requests hang writes nothing past its renew deadline.

load helpers
load reconciler

PA=$((RC_METRICS_BASE + 3))
PB=$((RC_METRICS_BASE + 4))
PP=$((RC_METRICS_BASE + 40)) # lease-proxy
# longer than HA: a loaded bed answers lease requests slowly, and a 3 s
# deadline would be missed before the cut
HA_CUT=(--gc-interval 5s --lease-name rc-ha-test --lease-duration 8s --renew-deadline 6s
        --retry-period 1s)
HA=(--gc-interval 5s --lease-name rc-ha-test --lease-duration 4s --renew-deadline 3s
    --retry-period 500ms)

setup_file() {
    rc_bed_setup
}

setup() {
    NS=$(fresh_ns rcha)
    rc_ns "$NS"
    km -n mkueue-system delete lease rc-ha-test --ignore-not-found >/dev/null
    rc_start rc-a "$PA" "${HA[@]}" --identity rc-a
    rc_start rc-b "$PB" "${HA[@]}" --identity rc-b
}

teardown() {
    teardown_common
    stop_component rc-a
    stop_component rc-b
    stop_component lease-proxy
    rc_ns_delete "$NS"
}

holder() { jp manager -n mkueue-system lease rc-ha-test -o jsonpath='{.spec.holderIdentity}'; }
leading() { [ "$(rc_metric "$1" mkueue_leader)" = 1 ]; }
has_holder() { [[ "$(holder)" == rc-[ab] ]]; }

@test "one leader at a time; it dispatches" {
    eventually 15 has_holder
    h=$(holder)
    if [ "$h" = rc-a ]; then lp=$PA fp=$PB; else lp=$PB fp=$PA; fi
    eventually 5 leading "$lp"
    [ "$(rc_metric "$fp" mkueue_leader)" != 1 ]
    rc_job "$NS" ha1
    eventually 20 is_ready "$NS" ha1
    # the follower did no work on it
    [ -z "$(rc_metric "$fp" 'multikueue_workloads_admitted_total{cluster_queue="team-a-cq",cluster="worker-1",replica_role="follower"}')" ]
    [ -z "$(rc_metric "$fp" 'multikueue_workloads_admitted_total{cluster_queue="team-a-cq",cluster="worker-2",replica_role="follower"}')" ]
    grep -q '"msg":"became leader"' "$MKUEUE_E2E_DIR/logs/$h.log"
}

@test "failover after the leader is killed, within the lease duration" {
    eventually 15 has_holder
    h=$(holder)
    if [ "$h" = rc-a ]; then f=rc-b fp=$PB; else f=rc-a fp=$PA; fi
    stop_component "$h" KILL
    start=$SECONDS
    eventually 15 is_eq "$f" holder
    [ $((SECONDS - start)) -le 8 ]
    eventually 5 leading "$fp"
    rc_job "$NS" ha2
    eventually 20 is_ready "$NS" ha2
    [ "$(rc_count_remote_jobs "$NS")" = 1 ]
}

@test "SIGTERM releases the lease: the standby takes over at once" {
    eventually 15 has_holder
    h=$(holder)
    if [ "$h" = rc-a ]; then f=rc-b; else f=rc-a; fi
    stop_component "$h" TERM
    grep -q '"msg":"lease released"' "$MKUEUE_E2E_DIR/logs/$h.log"
    start=$SECONDS
    eventually 10 is_eq "$f" holder
    [ $((SECONDS - start)) -le 3 ]
    rc_job "$NS" ha3
    eventually 20 is_ready "$NS" ha3
}

# proxy_start: e2e/scripts/lease-proxy.py in front of the manager, and a
# kubeconfig for it in $PROXY_KC (the manager's, another server).
proxy_start() { rc_proxy lease-proxy manager "$PP"; }

pid_gone() { ! kill -0 "$1" 2>/dev/null; }

# Writes (not GET) other than the Lease's that the proxy forwarded later
# than $1 seconds after the last lease write it forwarded, the acquiring POST
# included (negative: all).
writes_after_last_renewal() {
    jq -s --argjson d "$1" '
        (map(select(.action == "forward" and .method != "GET" and (.path | test("/leases(/|$)"))))
         | last | .t) as $renewed
        | map(select(.action == "forward" and .method != "GET" and (.path | test("/leases") | not)
                     and .t > $renewed + $d)) | length' "$PROXY_LOG"
}

@test "a leader cut from its Lease writes nothing once a standby may have taken over" {
    # rc-a leads through the proxy; rc-b talks to the manager directly
    stop_component rc-a
    stop_component rc-b
    km -n mkueue-system delete lease rc-ha-test --ignore-not-found >/dev/null
    proxy_start
    : >"$MKUEUE_E2E_DIR/logs/rc-a.log"
    start_component rc-a "$RC_BIN" --kubeconfig "$PROXY_KC" --metrics-addr "127.0.0.1:$PA" \
        "${HA_CUT[@]}" --identity rc-a
    eventually 30 curl -sf "http://127.0.0.1:$PA/readyz" -o /dev/null
    eventually 15 is_eq rc-a holder
    rc_start rc-b "$PB" "${HA_CUT[@]}" --identity rc-b
    rc_job "$NS" before
    eventually 20 is_ready "$NS" before
    pid=$(cat "$MKUEUE_E2E_DIR/run/rc-a.pid")

    # from now on rc-a's Lease requests hang, everything else it sends goes
    # through; new jobs keep arriving for 18 s, so there is work to write
    # (the old code kept writing until its lease GET timed out after 15 s)
    kill -USR1 "$(cat "$MKUEUE_E2E_DIR/run/lease-proxy.pid")"
    for i in $(seq 18); do
        rc_job "$NS" "cut$i"
        sleep 1
    done
    eventually 20 is_eq rc-b holder
    # rc-a gave up on its own (it exits, as controller-runtime does)
    eventually 20 pid_gone "$pid"
    grep -q '"msg":"leadership lost"' "$MKUEUE_E2E_DIR/logs/rc-a.log"
    # It did write through the proxy while it led ...
    [ "$(writes_after_last_renewal -1000000)" -gt 0 ]
    # ... but nothing later than leaseDuration (8 s) after its last renewal,
    # when rc-b could first take over (it stops at renewDeadline, 6 s).
    eq 0 "$(writes_after_last_renewal 8)"
    # rc-b, the one leader now, runs every job once
    for i in $(seq 18); do eventually 30 is_ready "$NS" "cut$i"; done
    eq 19 "$(rc_count_remote_jobs "$NS")"
}
