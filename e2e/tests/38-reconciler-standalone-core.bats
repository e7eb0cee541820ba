#!/usr/bin/env bats
# Standalone mode does what Kueue's core would on the manager: a Rejected
# check deactivates the Workload and its copies go; an eviction resets
# every check that is not Pending and stops the running manager job before
# the job is dispatched again (shown stopped, JobSuspended); another
# controller's check in Retry evicts too, and the delay it asks for
# (requeueAfterSeconds) holds the Workload's quota until then; the quota gate
# counts the MultiKueue check's flavors and refuses an overflow; a job's
# kueue.x-k8s.io/priority-class label gives its Workload a
# WorkloadPriorityClass's priority, and a change of the label changes it;
# a LocalQueue made again on another ClusterQueue moves its waiting Workloads;
# a resync reconciles the Workloads holding quota, not the queued ones,
# and passes every queue reading only what changed.

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
    km delete workloadpriorityclasses,clusterqueues,resourceflavors -l mkueue.test/file=38-core \
        --ignore-not-found >/dev/null
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
job_cond() {
    jp manager -n "$NS" job "$1" \
        -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status} {.status.conditions[?(@.type==\"$2\")].reason}"
}
qr_of() { rc_wl "$NS" "$1" "{.status.conditions[?(@.type==\"QuotaReserved\")].$2}"; }
check_of() { rc_wl "$NS" "$1" "{.status.admissionChecks[?(@.name==\"$2\")].$3}"; }
# mk_cq NAME COVERED RESOURCES: a ClusterQueue of this file behind the
# MultiKueue check, one flavor (default-flavor) with RESOURCES' quotas
mk_cq() {
    km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $1, labels: {mkueue.test/file: 38-core}}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [$2]
    flavors: [{name: default-flavor, resources: [$3]}]
  admissionChecksStrategy:
    admissionChecks: [{name: multikueue-ac}]
YAML
}

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

# extra_check_queue: ClusterQueue team-x-cq behind the MultiKueue check and
# a second one, extra-ac (another controller's: the test writes its state),
# and LocalQueue team-x of NS leading to it (team-a-cq on the workers).
extra_check_queue() {
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
}

# retry_check JOB CHECK MESSAGE SECONDS: the check turns Retry, asking for a
# retry in SECONDS (requeueAfterSeconds), as a controller writes it.
retry_check() {
    local w i now
    w=$(rc_wl_name "$NS" "$1")
    i=$(km -n "$NS" get workload "$w" -o json |
        jq --arg c "$2" '.status.admissionChecks | map(.name) | index($c)')
    now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    km -n "$NS" patch workload "$w" --subresource=status --type=json -p "[
        {\"op\":\"replace\",\"path\":\"/status/admissionChecks/$i/state\",\"value\":\"Retry\"},
        {\"op\":\"replace\",\"path\":\"/status/admissionChecks/$i/message\",\"value\":\"$3\"},
        {\"op\":\"replace\",\"path\":\"/status/admissionChecks/$i/lastTransitionTime\",\"value\":\"$now\"},
        {\"op\":\"add\",\"path\":\"/status/admissionChecks/$i/requeueAfterSeconds\",\"value\":$4}]" >/dev/null
}

requeued() {
    rc_wl "$NS" "$1" \
        '{.status.conditions[?(@.type=="Requeued")].status} {.status.conditions[?(@.type=="Requeued")].reason}'
}

epoch() { date -u -d "$1" +%s; }

@test "an eviction resets every check, and the job is suspended until it is dispatched again" {
    extra_check_queue
    RC_QUEUE=team-x rc_job "$NS" ev
    eventually 60 is_eq Pending check_of ev extra-ac state
    set_check ev extra-ac Ready "extra says yes"
    eventually 60 is_ready "$NS" ev
    eventually 30 is_eq false suspended ev
    eventually 30 is_eq 1 jp manager -n "$NS" job ev -o jsonpath='{.status.active}'
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
    # once no copy runs, the manager Job shows a stopped Job, as the Job
    # controller would (Kueue's adapter waits for it)
    eventually 30 is_eq "True JobSuspended" job_cond ev Suspended
    eq "" "$(jp manager -n "$NS" job ev -o jsonpath='{.status.active}{.status.startTime}')"
    set_check ev extra-ac Ready "extra says yes again"
    eventually 60 is_ready "$NS" ev
    eventually 30 is_eq false suspended ev
}

@test "another controller's Retry with a delay evicts the running job; the quota waits for requeueAt" {
    extra_check_queue
    RC_QUEUE=team-x RC_DURATION=10m rc_job "$NS" dl
    eventually 60 is_eq Pending check_of dl extra-ac state
    set_check dl extra-ac Ready "extra says yes"
    eventually 60 is_ready "$NS" dl
    eventually 30 is_eq false suspended dl
    # the other controller takes it back: retry in 15 s
    retry_check dl extra-ac "capacity went away" 15
    eventually 30 is_eq AdmissionCheck evicted_reason dl
    local at w
    at=$(rc_wl "$NS" dl '{.status.requeueState.requeueAt}')
    [ -n "$at" ]
    eq "False AdmissionCheck" "$(requeued dl)"
    eq False "$(rc_cond "$NS" dl QuotaReserved)"
    eq Pending "$(check_of dl extra-ac state)"
    eq 1 "$(check_of dl extra-ac retryCount)"
    eq 15 "$(check_of dl extra-ac requeueAfterSeconds)"
    eq "Reset to Pending after eviction. Previously: Ready" "$(check_of dl multikueue-ac message)"
    eq true "$(suspended dl)"
    w=$(rc_wl_name "$NS" dl)
    km -n "$NS" get events --field-selector "involvedObject.name=$w,reason=EvictedDueToAdmissionCheck" \
        -o jsonpath='{.items[*].message}' |
        grep -qF 'Evicted due to AdmissionCheck in Retry state: "extra-ac" (capacity went away)'
    eventually 30 no_remote_objects "$NS"
    eventually 30 is_eq "True JobSuspended" job_cond dl Suspended
    # the backoff over: requeueAt cleared, queued again, quota reserved no sooner
    eventually 60 is_eq "True BackoffFinished" requeued dl
    eq "" "$(rc_wl "$NS" dl '{.status.requeueState.requeueAt}')"
    eventually 30 is_eq True rc_cond "$NS" dl QuotaReserved
    [ "$(epoch "$(qr_of dl lastTransitionTime)")" -ge "$(epoch "$at")" ]
    set_check dl extra-ac Ready "extra says yes again"
    eventually 60 is_ready "$NS" dl
    eventually 30 is_eq false suspended dl
}

@test "a copy its worker's Kueue evicts: the Retry in Kueue's words, and the manager evicts" {
    rc_job "$NS" kv
    eventually 60 is_ready "$NS" kv
    c=$(rc_cluster_of "$NS" kv)
    w=$(rc_wl_name "$NS" kv)
    eventually 30 is_eq True jp "$c" -n "$NS" workload "$w" \
        -o jsonpath='{.status.conditions[?(@.type=="Admitted")].status}'
    # Kueue on the worker evicts it (its LocalQueue drained), its spec untouched
    k "$c" -n "$NS" patch localqueue team-a --type=merge -p '{"spec":{"stopPolicy":"HoldAndDrain"}}' >/dev/null
    want="Workload evicted on worker cluster: \"$c\", resetting for re-admission. Previously: \"Ready\""
    eventually 60 evicted_with kv "$want"
}

# evicted_with JOB TEXT: the Events of the job's Workload tell a Retry with
# exactly TEXT, and the manager evicted it (the check retried).
evicted_with() {
    local ev
    ev=$(km -n "$NS" get events --field-selector "involvedObject.name=$(rc_wl_name "$NS" "$1")" \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
    grep -qxF "$2" <<<"$ev" && [ "$(check_of "$1" multikueue-ac retryCount)" -ge 1 ] 2>/dev/null
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

@test "the quota gate counts only the flavors the MultiKueue check is on, and an overflow is an error on the Workload" {
    # two flavors; the MultiKueue check is on the small one only: its 1 cpu
    # is the quota, not 1 + 100
    km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: core-big, labels: {mkueue.test/file: 38-core}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: core-small, labels: {mkueue.test/file: 38-core}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-f-cq, labels: {mkueue.test/file: 38-core}}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: core-big, resources: [{name: cpu, nominalQuota: 100}]}
    - {name: core-small, resources: [{name: cpu, nominalQuota: 1}]}
  admissionChecksStrategy:
    admissionChecks: [{name: multikueue-ac, onFlavors: [core-small]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: team-f}
spec: {clusterQueue: team-f-cq}
YAML
    RC_QUEUE=team-f rc_job "$NS" big 2
    eventually 30 is_eq ExceedsMaxQuota qr_of big reason
    eq "ClusterQueue team-f-cq: the workload requests 2 cpu, more than the nominal quota of 1" \
        "$(qr_of big message)"

    # 9e15 cpus twice: more milli-units than int64 holds, refused, not wrapped
    km apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {namespace: $NS, name: huge, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  managedBy: kueue.x-k8s.io/multikueue
  suspend: true
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, resources: {requests: {cpu: "9000000000000000"}}}]
YAML
    eventually 30 is_eq InvalidRequests qr_of huge reason
    eq "ClusterQueue team-a-cq cannot count the workload's requests: resource cpu: podSets[0] count 2 times the pod's requests overflows (more than 9223372036854775807m)" \
        "$(qr_of huge message)"
    eq 0 "$(rc_count_remote_wls "$NS")"
}

@test "a LocalQueue made again on another ClusterQueue takes its waiting Workload along" {
    # a waiting Workload's ClusterQueue is its LocalQueue's: one made again
    # on another ClusterQueue moves it there (whatever the gate caches)
    mk_cq team-m-cq "cpu, memory, nvidia.com/gpu" \
        "{name: cpu, nominalQuota: 100m}, {name: memory, nominalQuota: 1Gi}, {name: nvidia.com/gpu, nominalQuota: 0}"
    lq_on() {
        km -n "$NS" delete localqueue team-a --ignore-not-found >/dev/null
        km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: team-a}
spec: {clusterQueue: $1}
YAML
    }
    lq_on team-m-cq
    rc_job "$NS" mover 500m
    eventually 30 is_eq ExceedsMaxQuota qr_of mover reason
    eq "ClusterQueue team-m-cq: the workload requests 500m cpu, more than the nominal quota of 100m" \
        "$(qr_of mover message)"
    lq_on team-a-cq
    eventually 30 is_eq True qr_of mover status
    eq team-a-cq "$(rc_wl "$NS" mover '{.status.admission.clusterQueue}')"
    eventually 60 is_ready "$NS" mover
}

@test "a resync reconciles the Workloads holding quota, not the queued ones" {
    # resyncs every 2 s: a Workload whose quota never fits has nothing to
    # drift and is not reconciled again once it settled (each reconcile of
    # it plans its rate-limited Pending Event: a "plan" line), while the
    # reconciles go on (the one holding quota). rc-core keeps these flags
    # for the rest of the file (the next test reads its debug log).
    stop_component rc-core
    rc_start rc-core "$PORT" "${FLAGS[@]}" --resync-period 2s --log-level debug
    rc_job "$NS" held
    rc_job "$NS" queued 100
    eventually 30 is_eq ExceedsMaxQuota qr_of queued reason
    eventually 60 is_ready "$NS" held
    local w log=$MKUEUE_E2E_DIR/logs/rc-core.log n0 r0
    w=$(rc_wl_name "$NS" queued)
    sleep 3 # its last own write's reconcile
    n0=$(grep -c "\"workload\":\"$NS/$w\"" "$log" || true)
    r0=$(rc_metric "$PORT" 'mkueue_reconcile_duration_seconds_count{kind="workload",result="ok"}')
    sleep 7
    eq "$n0" "$(grep -c "\"workload\":\"$NS/$w\"" "$log" || true)"
    (($(rc_metric "$PORT" 'mkueue_reconcile_duration_seconds_count{kind="workload",result="ok"}') > r0))
}

# a_pass_read CQ [MIN]: 1 when one of the gate's passes of CQ in rc-core's
# log (debug) after its line $FROM looked at MIN or more Workloads (default
# 0: any pass), else 0.
a_pass_read() {
    tail -n +"$((FROM + 1))" "$MKUEUE_E2E_DIR/logs/rc-core.log" | jq -R --arg q "$1" --argjson m "${2:-0}" \
        'fromjson? | select(.msg == "gate pass" and .clusterQueue == $q and (.read | tonumber) >= $m)' |
        jq -s 'length | if . > 0 then 1 else 0 end'
}

@test "a pass of an empty ClusterQueue reads none of the other queues' Workloads" {
    # rc-core logs at debug level (the test above): each gate pass tells
    # how many cached Workloads it looked at. A queue with no Workloads
    # reads none, however many wait elsewhere (it once walked the whole
    # cache: every pass of an idle queue cost every Workload of the manager)
    FROM=$(wc -l <"$MKUEUE_E2E_DIR/logs/rc-core.log")
    rc_job "$NS" waits 100
    eventually 30 is_eq ExceedsMaxQuota qr_of waits reason
    mk_cq team-e-cq cpu "{name: cpu, nominalQuota: 1}"
    eventually 30 is_eq 1 a_pass_read team-e-cq
    eq 0 "$(a_pass_read team-e-cq 1)"
    # the queue the Workload waits in reads it
    eq 1 "$(a_pass_read team-a-cq 1)"
}

# gate_passes CQ KIND: rc-core's count of the gate's passes of that kind.
gate_passes() {
    local v
    v=$(rc_metric "$PORT" "mkueue_gate_passes_total{cluster_queue=\"$1\",pass=\"$2\"}")
    echo "${v:-0}"
}

# no_full_pass_for S: no full pass of team-a-cq within S seconds.
no_full_pass_for() {
    local f
    f=$(gate_passes team-a-cq full)
    sleep "$1"
    eq "$f" "$(gate_passes team-a-cq full)"
}

@test "a resync passes every ClusterQueue, and one whose Workloads did not change reads none of them" {
    # rc-core resyncs every 2 s (above). Once team-a-cq has settled around
    # a running job and the Workloads that wait (the earlier tests' jobs
    # gone), a resync gives it a fast pass: a resync is no change
    # (gate_index.h). It once read every queue whole at each resync
    # (seconds of CPU for a queue of 50,000): then no 3 s went by without
    # a full pass
    RC_DURATION=1h rc_job "$NS" steady
    eventually 60 is_ready "$NS" steady
    eventually 60 no_full_pass_for 3
    local fast0
    fast0=$(gate_passes team-a-cq fast)
    no_full_pass_for 5
    (($(gate_passes team-a-cq fast) > fast0))
}
