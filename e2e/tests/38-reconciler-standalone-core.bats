#!/usr/bin/env bats
# Standalone mode does what Kueue's core would on the manager: a Rejected
# check deactivates the Workload and its copies go; an eviction resets
# every check that is not Pending and stops the running manager job before
# the job is dispatched again; a job's kueue.x-k8s.io/priority-class label
# gives its Workload a WorkloadPriorityClass's priority, and a change of the
# label changes it.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 8))
FLAGS=(--leader-elect=false --gc-interval 5s)

setup_file() {
    rc_bed_setup
    rc_start rc-core "$PORT" "${FLAGS[@]}"
}

teardown_file() {
    stop_component rc-core
    km delete clusterqueue team-x-cq --ignore-not-found >/dev/null
    km delete admissioncheck extra-ac --ignore-not-found >/dev/null
    km delete workloadpriorityclasses -l mkueue.test/file=38-core --ignore-not-found >/dev/null
}

setup() {
    NS=$(fresh_ns rccore)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

suspended() { jp manager -n "$NS" job "$1" -o jsonpath='{.spec.suspend}'; }
active() { rc_wl "$NS" "$1" '{.spec.active}'; }
evicted_reason() { rc_wl "$NS" "$1" '{.status.conditions[?(@.type=="Evicted")].reason}'; }
check_of() { rc_wl "$NS" "$1" "{.status.admissionChecks[?(@.name==\"$2\")].$3}"; }

# set_check JOB CHECK STATE MESSAGE: writes one check of the job's Workload,
# as another admission check controller would.
set_check() {
    local w i
    w=$(rc_wl_name "$NS" "$1")
    i=$(km -n "$NS" get workload "$w" -o json |
        jq --arg c "$2" '.status.admissionChecks | map(.name) | index($c)')
    km -n "$NS" patch workload "$w" --subresource=status --type=json -p "[
        {\"op\":\"replace\",\"path\":\"/status/admissionChecks/$i/state\",\"value\":\"$3\"},
        {\"op\":\"replace\",\"path\":\"/status/admissionChecks/$i/message\",\"value\":\"$4\"}]" >/dev/null
}

@test "a Rejected check set by another controller deactivates the Workload; its copies go" {
    rc_job "$NS" rj
    eventually 60 is_ready "$NS" rj
    eventually 30 is_eq false suspended rj
    set_check rj multikueue-ac Rejected "rejected by the test"
    eventually 30 is_eq false active rj
    eventually 30 is_eq DeactivatedDueToAdmissionCheck evicted_reason rj
    eq "The workload is deactivated due to Admission check(s): multikueue-ac, were rejected" \
        "$(rc_wl "$NS" rj '{.status.conditions[?(@.type=="Evicted")].message}')"
    eq "" "$(rc_cond "$NS" rj DeactivationTarget)"
    eq False "$(rc_cond "$NS" rj QuotaReserved)"
    eventually 30 no_remote_objects "$NS"
    eq true "$(suspended rj)"
    km -n "$NS" get events --field-selector reason=AdmissionCheckRejected -o jsonpath='{.items[*].message}' |
        grep -q "Deactivating workload because AdmissionCheck for multikueue-ac was Rejected: rejected by the test"
}

@test "an eviction resets every check, and the job is suspended until it is dispatched again" {
    km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: extra-ac}
spec: {controllerName: example.com/extra}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-x-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 16}
      - {name: memory, nominalQuota: 64Gi}
      - {name: nvidia.com/gpu, nominalQuota: 8}
  admissionChecksStrategy:
    admissionChecks: [{name: multikueue-ac}, {name: extra-ac}]
YAML
    local c
    for c in manager worker-1 worker-2; do
        local cq=team-a-cq; [ "$c" = manager ] && cq=team-x-cq
        k "$c" apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: team-x}
spec: {clusterQueue: $cq}
YAML
    done
    RC_QUEUE=team-x rc_job "$NS" ev
    eventually 60 is_eq Pending check_of ev extra-ac state
    set_check ev extra-ac Ready "extra says yes"
    eventually 60 is_ready "$NS" ev
    eventually 30 is_eq false suspended ev
    c=$(rc_cluster_of "$NS" ev)
    # the worker evicts its copy: Retry, and the manager evicts as Kueue would
    k "$c" -n "$NS" patch workload "$(rc_wl_name "$NS" ev)" --type=merge \
        -p '{"spec":{"active":false}}' >/dev/null
    eventually 60 is_eq 1 check_of ev multikueue-ac retryCount
    eq Pending "$(check_of ev extra-ac state)"
    eq "Reset to Pending after eviction. Previously: Ready" "$(check_of ev extra-ac message)"
    eq "Reset to Pending after eviction. Previously: Retry" "$(check_of ev multikueue-ac message)"
    # not dispatched again while extra-ac is Pending: the job stays stopped
    eq true "$(suspended ev)"
    eventually 30 no_remote_objects "$NS"
    set_check ev extra-ac Ready "extra says yes again"
    eventually 60 is_ready "$NS" ev
    eventually 30 is_eq false suspended ev
}

# wpc NAME VALUE: a WorkloadPriorityClass on the manager (only there: the
# copies carry the value, the workers need no class).
wpc() {
    km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: $1, labels: {mkueue.test/file: 38-core}}
value: $2
YAML
}
priority_of() { rc_wl "$NS" "$1" '{.spec.priority} {.spec.priorityClassRef.group} {.spec.priorityClassRef.kind} {.spec.priorityClassRef.name}'; }
copy_priority() {
    local c; c=$(rc_cluster_of "$NS" "$1")
    [ -n "$c" ] && jp "$c" -n "$NS" workload "$(rc_wl_name "$NS" "$1")" \
        -o jsonpath='{.spec.priority} {.spec.priorityClassRef.name}'
}

@test "kueue.x-k8s.io/priority-class: the WorkloadPriorityClass's priority on the Workload and its copy, following the label" {
    wpc "$NS-high" 1000
    wpc "$NS-low" 10
    RC_LABELS="kueue.x-k8s.io/priority-class: $NS-high" rc_job "$NS" pj
    eventually 60 is_eq "1000 kueue.x-k8s.io WorkloadPriorityClass $NS-high" priority_of pj
    eventually 60 is_ready "$NS" pj
    eq "1000 $NS-high" "$(copy_priority pj)"
    # the label changes on the running job: the Workload and its copy follow
    km -n "$NS" label job pj "kueue.x-k8s.io/priority-class=$NS-low" --overwrite >/dev/null
    eventually 30 is_eq "10 kueue.x-k8s.io WorkloadPriorityClass $NS-low" priority_of pj
    eventually 30 is_eq "10 $NS-low" copy_priority pj
    eq "Updated workload priority class: $NS/$(rc_wl_name "$NS" pj)" \
        "$(km -n "$NS" get events --field-selector reason=UpdatedWorkload,involvedObject.name=pj -o jsonpath='{.items[0].message}')"
    eq Ready "$(rc_check_state "$NS" pj)"

    # a class that does not exist: no Workload (Kueue's error), until it does
    RC_LABELS="kueue.x-k8s.io/priority-class: $NS-later" rc_job "$NS" lj
    # the reconciler's log (JSON) carries Kueue's text
    want="workloadpriorityclasses.kueue.x-k8s.io \\\"$NS-later\\\" not found"
    eventually 30 grep -qF "$want" "$MKUEUE_E2E_DIR/logs/rc-core.log"
    eq "" "$(rc_wl_name "$NS" lj)"
    wpc "$NS-later" 7
    eventually 60 is_eq "7 kueue.x-k8s.io WorkloadPriorityClass $NS-later" priority_of lj
}
