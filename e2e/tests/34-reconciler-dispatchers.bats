#!/usr/bin/env bats
# The Incremental dispatcher (by name, stepSize clusters per round, as Kueue)
# and an External dispatcher (copies go where status.nominatedClusterNames
# says).

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 5))

setup_file() {
    rc_bed_setup
    kw1 apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: rc-empty-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 0}]
YAML
}

teardown_file() {
    kw1 delete clusterqueue rc-empty-cq --ignore-not-found >/dev/null
    km delete clusterqueue rc-late-cq --ignore-not-found >/dev/null
    km delete admissioncheck rc-late-ac --ignore-not-found >/dev/null
}

setup() {
    NS=$(fresh_ns rcdisp)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_secret worker-1 "$MKUEUE_E2E_DIR/kubeconfig/worker-1.yaml"
    rc_secret worker-2 "$MKUEUE_E2E_DIR/kubeconfig/worker-2.yaml"
    stop_component rc-disp
    rc_ns_delete "$NS"
}

nominated() { rc_wl "$NS" "$1" '{.status.nominatedClusterNames}'; }

@test "Incremental: one cluster per round by name; the next round adds the next one" {
    # worker-1 (first in the config) has no quota for this namespace
    kw1 -n "$NS" patch localqueue team-a --type=merge -p '{"spec":{"clusterQueue":"rc-empty-cq"}}' >/dev/null ||
        { kw1 -n "$NS" delete localqueue team-a >/dev/null
          kw1 apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: team-a}
spec: {clusterQueue: rc-empty-cq}
YAML
        }
    rc_start rc-disp "$PORT" --leader-elect=false --dispatcher Incremental \
        --incremental-step-size 1 --incremental-round 6s
    rc_job "$NS" inc
    eventually 10 is_eq '["worker-1"]' nominated inc
    eventually 10 is_eq workload.kueue.x-k8s.io/$(rc_wl_name "$NS" inc) rc_remote_wls worker-1 "$NS"
    sleep 2
    [ -z "$(rc_remote_wls worker-2 "$NS")" ]
    [ "$(rc_check_state "$NS" inc)" = Pending ]
    # the round ends: worker-2 joins and admits
    eventually 15 is_ready "$NS" inc
    [ "$(rc_cluster_of "$NS" inc)" = worker-2 ]
    [ "$(rc_remote_jobs worker-2 "$NS")" = job.batch/inc ]
    eventually 10 is_eq "" rc_remote_wls worker-1 "$NS"
    [ -z "$(nominated inc)" ]
}

@test "Incremental nominates a disconnected cluster in its turn, as Kueue; the next round moves on" {
    # worker-1 (first by name) points at a closed port: disconnected
    rc_secret_dead worker-1
    rc_start rc-disp "$PORT" --leader-elect=false --dispatcher Incremental \
        --incremental-step-size 1 --incremental-round 6s
    eventually 20 is_eq False mkc_active worker-1
    rc_job "$NS" down
    eventually 10 is_eq '["worker-1"]' nominated down
    sleep 2
    [ -z "$(rc_remote_wls worker-2 "$NS")" ]
    [ "$(rc_check_state "$NS" down)" = Pending ]
    eventually 20 is_ready "$NS" down
    [ "$(rc_cluster_of "$NS" down)" = worker-2 ]
    rc_secret worker-1 "$MKUEUE_E2E_DIR/kubeconfig/worker-1.yaml"
}

@test "an AdmissionCheck changed to name its config moves its Workloads now, not at the resync" {
    km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: rc-late-ac}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: rc-no-such-config}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: rc-late-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 4}]
  admissionChecksStrategy:
    admissionChecks: [{name: rc-late-ac}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: late}
spec: {clusterQueue: rc-late-cq}
YAML
    local c
    for c in worker-1 worker-2; do
        k "$c" apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: late}
spec: {clusterQueue: team-a-cq}
YAML
    done
    # the default resync (5m) is far beyond what this scenario waits
    rc_start rc-disp "$PORT" --leader-elect=false
    RC_QUEUE=late rc_job "$NS" late
    eventually 10 is_eq 1 count_of manager workloads -n "$NS"
    sleep 3
    [ "$(rc_count_remote_wls "$NS")" = 0 ]
    km patch admissioncheck rc-late-ac --type=merge \
        -p '{"spec":{"parameters":{"name":"multikueue-config"}}}' >/dev/null
    eventually 20 is_ready "$NS" late
}

@test "gcInterval 0: an orphaned remote Workload stays, also when its worker reconnects" {
    rc_start rc-disp "$PORT" --leader-elect=false --gc-interval 0
    rc_orphan_wl worker-2 "$NS"
    rc_secret_dead worker-2
    eventually 20 is_eq False mkc_active worker-2
    rc_secret worker-2 "$MKUEUE_E2E_DIR/kubeconfig/worker-2.yaml"
    eventually 20 is_eq True mkc_active worker-2
    sleep 5
    [ "$(kw2 -n "$NS" get workload rc-orphan -o name)" = workload.kueue.x-k8s.io/rc-orphan ]
}

@test "External: copies go exactly to the clusters an external controller nominates" {
    rc_start rc-disp "$PORT" --leader-elect=false --dispatcher example.com/custom-mk-dispatcher
    rc_job "$NS" ext
    eventually 10 is_eq True rc_cond "$NS" ext QuotaReserved
    sleep 2
    [ "$(rc_count_remote_wls "$NS")" = 0 ]
    km -n "$NS" patch workload "$(rc_wl_name "$NS" ext)" --subresource=status --type=merge \
        -p '{"status":{"nominatedClusterNames":["worker-2"]}}' >/dev/null
    eventually 20 is_ready "$NS" ext
    [ "$(rc_cluster_of "$NS" ext)" = worker-2 ]
    [ -z "$(rc_remote_wls worker-1 "$NS")" ]
    [ "$(rc_remote_jobs worker-2 "$NS")" = job.batch/ext ]
}
