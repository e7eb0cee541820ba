#!/usr/bin/env bats
# Two reconcilers with leader election on a Lease: one leads and writes,
# the other waits; failover after the leader dies (SIGKILL: within the
# lease duration) or stops (SIGTERM: the lease is released at once).

load helpers
load reconciler

PA=$((RC_METRICS_BASE + 3))
PB=$((RC_METRICS_BASE + 4))
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
