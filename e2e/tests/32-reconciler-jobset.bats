#!/usr/bin/env bats
# mkueue-reconciler with JobSets. On the workers the real JobSet controller
# turns the remote copy into Jobs, KWOK runs their pods (which run until the
# scenario ends them), and the status travels back to the manager.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 2))

setup_file() {
    rc_bed_setup
    rc_start rc-jobset "$PORT" --leader-elect=false --gc-interval 5s
}

teardown_file() {
    stop_component rc-jobset
}

setup() {
    NS=$(fresh_ns rcjs)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

# jobset NAME [MANAGED-BY]: two replicated jobs, suspended and managed by
# MultiKueue as the webhook leaves them
jobset() {
    km apply -f - >/dev/null <<YAML
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  namespace: $NS
  name: $1
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  managedBy: ${2:-kueue.x-k8s.io/multikueue}
  suspend: true
  ttlSecondsAfterFinished: 10
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        template:
          metadata:
            annotations: {mkueue.test/result: Running}
          spec:
            restartPolicy: Never
            containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          metadata:
            annotations: {mkueue.test/result: Running}
          spec:
            restartPolicy: Never
            containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
YAML
}

remote_jobsets() { k "$1" -n "$NS" get jobsets -l kueue.x-k8s.io/multikueue-origin=multikueue -o name 2>/dev/null; }
# rjs JOBSET FIELD: FIELD of the manager JobSet's leader and workers statuses
# (the controller lists them in no fixed order)
rjs() {
    jp manager -n "$NS" jobset "$1" -o jsonpath="{.status.replicatedJobsStatus[?(@.name==\"leader\")].$2} {.status.replicatedJobsStatus[?(@.name==\"workers\")].$2}"
}

# finish CLUSTER JOBSET: every pod of the JobSet on that worker ends (KWOK).
finish() {
    k "$1" -n "$NS" annotate pods -l "jobset.sigs.k8s.io/jobset-name=$2" --overwrite \
        mkueue.test/result=Succeeded mkueue.test/duration=0s >/dev/null
}

@test "a JobSet is dispatched to exactly one worker with its pod sets; the loser's copy is removed" {
    jobset train
    eventually 20 is_ready "$NS" train
    c=$(rc_cluster_of "$NS" train)
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    [ "$(remote_jobsets "$c")" = jobset.jobset.x-k8s.io/train ]
    eventually 10 is_eq "" rc_remote_wls "$other" "$NS"
    [ -z "$(remote_jobsets "$other")" ]
    [ "$(rc_wl "$NS" train '{.spec.podSets[*].name}')" = "leader workers" ]
    [ "$(rc_wl "$NS" train '{.spec.podSets[*].count}')" = "1 4" ]
    # the copy: no managedBy, no TTL; started by the worker's Kueue
    [ -z "$(jp "$c" -n "$NS" jobset train -o jsonpath='{.spec.managedBy}')" ]
    [ -z "$(jp "$c" -n "$NS" jobset train -o jsonpath='{.spec.ttlSecondsAfterFinished}')" ]
    eventually 10 is_eq false jp "$c" -n "$NS" jobset train -o jsonpath='{.spec.suspend}'
    # and the manager's JobSet is released once the copy exists
    eventually 10 is_eq false jp manager -n "$NS" jobset train -o jsonpath='{.spec.suspend}'
}

@test "JobSet status is synced while running and at the end; completion removes remote objects" {
    jobset run
    eventually 20 is_ready "$NS" run
    c=$(rc_cluster_of "$NS" run)
    # the worker's JobSet controller made the Jobs; KWOK runs their 5 pods
    eventually 30 is_eq 3 count_of "$c" jobs -n "$NS" -l jobset.sigs.k8s.io/jobset-name=run
    eventually 30 is_eq 5 count_of "$c" pods -n "$NS" -l jobset.sigs.k8s.io/jobset-name=run --field-selector=status.phase=Running
    eventually 20 is_eq "1 2" rjs run ready
    [ "$(count_of manager pods -n "$NS")" = 0 ]
    finish "$c" run
    eventually 60 is_eq True jp manager -n "$NS" jobset run -o jsonpath='{.status.conditions[?(@.type=="Completed")].status}'
    [ "$(rjs run succeeded)" = "1 2" ]
    eventually 20 is_eq True rc_cond "$NS" run Finished
    eventually 20 is_eq "" remote_jobsets "$c"
    eventually 20 no_remote_objects "$NS"
}

@test "deleting the manager JobSet removes the remote JobSet" {
    jobset gone
    eventually 20 is_ready "$NS" gone
    c=$(rc_cluster_of "$NS" gone)
    km -n "$NS" delete jobset gone >/dev/null
    eventually 20 is_eq "" remote_jobsets "$c"
    eventually 20 no_remote_objects "$NS"
    eventually 20 is_eq "" km -n "$NS" get workloads -o name
}

@test "a JobSet whose managedBy is another controller is rejected, not dispatched" {
    jobset other example.com/other
    eventually 20 is_eq Rejected rc_check_state "$NS" other
    msg=$(rc_wl "$NS" other '{.status.admissionChecks[0].message}')
    [ "$msg" = 'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "example.com/other"' ]
    [ "$(rc_cond "$NS" other QuotaReserved)" != True ]
    [ "$(rc_count_remote_wls "$NS")" = 0 ]
}
