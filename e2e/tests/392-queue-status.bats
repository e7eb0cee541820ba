#!/usr/bin/env bats
# The queues' status in standalone mode, as Kueue's core writes it (issue
# 13): `kubectl get clusterqueues,localqueues` on the manager shows how many
# Workloads are pending, reserving and admitted, and the flavors' usage.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 92))

setup_file() {
    rc_bed_setup
    rc_start rc-qstatus "$PORT" --leader-elect=false --gc-interval 5s
}

teardown_file() {
    stop_component rc-qstatus
}

setup() {
    NS=$(fresh_ns rcqs)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

lq() { jp manager -n "$NS" localqueue team-a -o jsonpath="$1"; }
lq_counts() { lq '{.status.pendingWorkloads}/{.status.reservingWorkloads}/{.status.admittedWorkloads}'; }
cq() { jp manager clusterqueue team-a-cq -o jsonpath="$1"; }
cq_counts() { cq '{.status.pendingWorkloads}/{.status.reservingWorkloads}/{.status.admittedWorkloads}'; }
# the same three counts, from the manager's unfinished Workloads of every namespace
wl_counts() {
    km get workloads -A -o json | jq -r '
      [.items[] | select(.metadata.deletionTimestamp == null)
       | (.status.conditions // []) as $c
       | select([$c[] | select(.type == "Finished" and .status == "True")] | length == 0)
       | {r: ([$c[] | select(.type == "QuotaReserved" and .status == "True")] | length > 0),
          a: ([$c[] | select(.type == "Admitted" and .status == "True")] | length > 0)}]
      | "\([.[] | select(.r | not)] | length)/\([.[] | select(.r)] | length)/\([.[] | select(.a)] | length)"'
}
cq_matches() { [ "$(cq_counts)" = "$(wl_counts)" ]; }

@test "LocalQueue and ClusterQueue count pending, reserving and admitted Workloads, and kubectl shows them" {
    eventually 30 is_eq 0/0/0 lq_counts # a new LocalQueue gets its status at once
    [ "$(lq '{.status.conditions[?(@.type=="Active")].message}')" = "Can submit new workloads to localQueue" ]
    rc_job "$NS" runs 1500m
    rc_job "$NS" huge 20 # more than the manager's 16 cpu: pending for good
    eventually 30 is_ready "$NS" runs
    eventually 30 is_eq 1/1/1 lq_counts
    [ "$(lq '{.status.flavorsReservation[0].name}')" = default-flavor ]
    [ "$(lq '{.status.flavorsReservation[0].resources[?(@.name=="cpu")].total}')" = 1500m ]
    [ "$(lq '{.status.flavorsUsage[0].resources[?(@.name=="cpu")].total}')" = 1500m ]
    # kubectl's columns (the CRDs' printer columns)
    run km -n "$NS" get localqueue team-a --no-headers
    [[ "$output" =~ team-a[[:space:]]+team-a-cq[[:space:]]+1[[:space:]]+1 ]]
    # the ClusterQueue counts every namespace's Workloads, as they are
    eventually 30 cq_matches
    [ "$(cq '{.status.conditions[?(@.type=="Active")].reason}')" = Ready ]
    [ "$(cq '{.status.flavorsReservation[0].resources[?(@.name=="cpu")].borrowed}')" = 0 ]
    run km get clusterqueue team-a-cq --no-headers -o wide
    [[ "$output" == *" $(cq '{.status.pendingWorkloads}') "* ]]
    # the job ends: it is neither reserving nor admitted any more
    rc_finish_pod "$(rc_cluster_of "$NS" runs)" "$NS" runs
    eventually 30 is_eq 1/0/0 lq_counts
    [ "$(lq '{.status.flavorsReservation[0].resources[?(@.name=="cpu")].total}')" = 0 ]
    eventually 30 cq_matches
}
