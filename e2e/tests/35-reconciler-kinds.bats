#!/usr/bin/env bats
# The other managedBy kinds go through the same adapter path as Job and
# JobSet: Kubeflow jobs, MPIJob, RayJob, RayCluster, AppWrapper.
# Their operators do not run on the bed (their CRDs only); each test checks the
# Workload's pod sets, the worker copy (managedBy gone, prebuilt Workload
# named, origin label) and cleanup; PyTorchJob also plays its operator to
# finish and have its status brought back. RayJob and AppWrapper also check
# that real Kueue on the worker takes the prebuilt Workload as in sync with
# the job (admits it, unsuspends the job, never finishes it OutOfSync).

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 5))

setup_file() {
    rc_bed_setup
    rc_start rc-kinds "$PORT" --leader-elect=false --gc-interval 5s
}

teardown_file() {
    stop_component rc-kinds
}

setup() {
    NS=$(fresh_ns rckinds)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

POD='{spec: {restartPolicy: Never, containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]}}'

# create KIND-YAML: applies a job of queue team-a in $NS, given its apiVersion,
# kind, name and spec lines (already indented by two spaces)
create() {
    km apply -f - >/dev/null <<YAML
apiVersion: $1
kind: $2
metadata:
  namespace: $NS
  name: $3
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
$4
YAML
}

remote() { jp "$1" -n "$NS" "$2" "$3" -o jsonpath="$4"; }

# dispatched RESOURCE NAME MANAGEDBY-JSONPATH PODSET-NAMES PODSET-COUNTS
dispatched() {
    local res=$1 name=$2 mb=$3
    eventually 20 is_ready "$NS" "$name"
    [ "$(rc_wl "$NS" "$name" '{.spec.podSets[*].name}')" = "$4" ]
    [ "$(rc_wl "$NS" "$name" '{.spec.podSets[*].count}')" = "$5" ]
    c=$(rc_cluster_of "$NS" "$name")
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    [ "$(remote "$c" "$res" "$name" "{$mb}")" = "" ]
    [ "$(remote "$c" "$res" "$name" '{.metadata.labels.kueue\.x-k8s\.io/multikueue-origin}')" = multikueue ]
    [ "$(remote "$c" "$res" "$name" '{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')" = "$(rc_wl_name "$NS" "$name")" ]
    eventually 10 is_eq "" rc_remote_wls "$other" "$NS"
    ! k "$other" -n "$NS" get "$res" "$name" >/dev/null 2>&1 || false
    # the manager's copy keeps managedBy: it never runs there
    [ "$(jp manager -n "$NS" "$res" "$name" -o jsonpath="{$mb}")" = kueue.x-k8s.io/multikueue ]
}

# in_sync RESOURCE NAME: after dispatched; Kueue on worker $c admits the
# prebuilt Workload and unsuspends the job, and the Workload stays the same
# object, not Finished (EquivalentToWorkload held: no OutOfSync, no re-dispatch).
in_sync() {
    local res=$1 name=$2 wl uid
    wl=$(rc_wl_name "$NS" "$name")
    eventually 30 is_eq True jp "$c" -n "$NS" workload "$wl" \
        -o jsonpath='{.status.conditions[?(@.type=="Admitted")].status}'
    # unsuspended: RayJob and AppWrapper drop a false suspend (omitempty)
    eventually 20 is_eq "$name=" jp "$c" -n "$NS" "$res" "$name" -o jsonpath='{.metadata.name}={.spec.suspend}'
    uid=$(jp "$c" -n "$NS" workload "$wl" -o jsonpath='{.metadata.uid}')
    sleep 5
    [ "$(jp "$c" -n "$NS" workload "$wl" -o jsonpath='{.metadata.uid}')" = "$uid" ]
    [ "$(jp "$c" -n "$NS" workload "$wl" -o jsonpath='{.status.conditions[?(@.type=="Finished")].reason}')" = "" ]
    [ "$(rc_count_remote_wls "$NS")" = 1 ]
}

gone_everywhere() {
    km -n "$NS" delete "$1" "$2" >/dev/null
    eventually 20 eval "! k '$c' -n '$NS' get '$1' '$2' >/dev/null 2>&1"
    eventually 20 is_eq "" km -n "$NS" get workloads -o name
}

@test "PyTorchJob: dispatched with a pod set per replica type, status back, finished, cleaned up" {
    create kubeflow.org/v1 PyTorchJob pt "  runPolicy: {managedBy: kueue.x-k8s.io/multikueue, suspend: true}
  pytorchReplicaSpecs:
    Worker: {replicas: 3, template: $POD}
    Master: {replicas: 1, template: $POD}"
    dispatched pytorchjobs pt .spec.runPolicy.managedBy "master worker" "1 3"
    # the worker's operator reports success (no operator on the bed: the test
    # writes it); the worker's Kueue finishes the Workload
    k "$c" -n "$NS" patch pytorchjob pt --subresource=status --type=merge -p \
        '{"status":{"conditions":[{"type":"Succeeded","status":"True","reason":"PyTorchJobSucceeded","message":"done","lastTransitionTime":"2026-01-01T00:00:00Z"}],"replicaStatuses":{"Master":{"succeeded":1},"Worker":{"succeeded":3}}}}' >/dev/null
    eventually 20 is_eq True rc_cond "$NS" pt Finished
    [ "$(jp manager -n "$NS" pytorchjob pt -o jsonpath='{.status.conditions[?(@.type=="Succeeded")].status}')" = True ]
    [ "$(jp manager -n "$NS" pytorchjob pt -o jsonpath='{.status.replicaStatuses.Worker.succeeded}')" = 3 ]
    eventually 20 no_remote_objects "$NS"
    eventually 20 eval "! k '$c' -n '$NS' get pytorchjob pt >/dev/null 2>&1"
}

# rejected_as NAME WANT-MESSAGE: the job's Workload is Rejected with exactly
# that message, holds no quota and has no copy.
rejected_as() {
    eventually 20 is_eq Rejected rc_check_state "$NS" "$1"
    eq "$2" "$(rc_wl "$NS" "$1" '{.status.admissionChecks[0].message}')"
    [ "$(rc_cond "$NS" "$1" QuotaReserved)" != True ]
    eq 0 "$(rc_count_remote_wls "$NS")"
}

@test "managed by another controller: Kueue's words, spec.managedBy for Kubeflow v1 kinds, spec.runPolicy.managedBy for MPIJob" {
    create kubeflow.org/v1 PyTorchJob pto "  runPolicy: {managedBy: example.com/other}
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: $POD}"
    rejected_as pto 'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "example.com/other"'
    create kubeflow.org/v2beta1 MPIJob mpio "  runPolicy: {managedBy: example.com/other}
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: $POD}"
    rejected_as mpio 'The owner is not managed by Kueue: Expecting spec.runPolicy.managedBy to be "kueue.x-k8s.io/multikueue" not "example.com/other"'
}

@test "TFJob and MPIJob: replica types in the operator's order; runPolicy.managedBy removed remotely" {
    create kubeflow.org/v1 TFJob tf "  runPolicy: {managedBy: kueue.x-k8s.io/multikueue}
  tfReplicaSpecs:
    Worker: {replicas: 2, template: $POD}
    PS: {replicas: 1, template: $POD}
    Chief: {replicas: 1, template: $POD}"
    dispatched tfjobs tf .spec.runPolicy.managedBy "chief ps worker" "1 1 2"
    gone_everywhere tfjob tf
    create kubeflow.org/v2beta1 MPIJob mpi "  runPolicy: {managedBy: kueue.x-k8s.io/multikueue}
  mpiReplicaSpecs:
    Worker: {replicas: 4, template: $POD}
    Launcher: {replicas: 1, template: $POD}"
    dispatched mpijobs mpi .spec.runPolicy.managedBy "launcher worker" "1 4"
    gone_everywhere mpijob mpi
}

@test "RayJob: head, worker groups (replicas x hosts) and Kueue's default submitter; in sync on the worker" {
    create ray.io/v1 RayJob rj "  managedBy: kueue.x-k8s.io/multikueue
  suspend: true
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec: {rayStartParams: {}, template: $POD}
    workerGroupSpecs:
    - {groupName: GPU, replicas: 2, numOfHosts: 2, rayStartParams: {}, template: $POD}"
    dispatched rayjobs rj .spec.managedBy "head gpu submitter" "1 4 1"
    [ "$(rc_wl "$NS" rj '{.spec.podSets[2].template.spec.containers[0].image}')" = busybox ]
    [ "$(rc_wl "$NS" rj '{.spec.podSets[2].template.spec.containers[0].resources.limits.memory}')" = 1Gi ]
    in_sync rayjobs rj
    gone_everywhere rayjob rj
}

@test "AppWrapper: declared and inferred pod sets as the AppWrapper library builds them; in sync on the worker" {
    create workload.codeflare.dev/v1beta2 AppWrapper aw "  managedBy: kueue.x-k8s.io/multikueue
  suspend: true
  components:
  - podSets: [{replicas: 2, path: template.spec.template}]
    template:
      apiVersion: batch/v1
      kind: Job
      metadata: {name: aw-job}
      spec: {parallelism: 2, completions: 2, template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox, env: [{name: E, value: x}], ports: [{containerPort: 80}], resources: {requests: {cpu: 100m}}}]}}}
  - template:
      apiVersion: batch/v1
      kind: Job
      metadata: {name: aw-job-2}
      spec: {template: $POD}"
    dispatched appwrappers aw .spec.managedBy "aw-0 aw-1" "2 1"
    [ "$(rc_wl "$NS" aw '{.spec.podSets[0].template.spec.containers[0].env}')" = "" ]
    [ "$(rc_wl "$NS" aw '{.spec.podSets[0].template.spec.containers[0].imagePullPolicy}')" = Always ]
    in_sync appwrappers aw
    gone_everywhere appwrapper aw
}

# TrainJob is left out: Kueue computes its pod sets from the JobSet the
# trainer's runtime framework would build out of the ClusterTrainingRuntime
# (docs/multikueue-compat.md 7.12); mkueue does not resolve runtimes, so Kueue
# on a worker finds the prebuilt Workload out of sync (Finished/OutOfSync).
@test "RayCluster: head and worker groups" {
    create ray.io/v1 RayCluster rc "  managedBy: kueue.x-k8s.io/multikueue
  headGroupSpec: {rayStartParams: {}, template: $POD}
  workerGroupSpecs:
  - {groupName: cpu, replicas: 3, rayStartParams: {}, template: $POD}"
    dispatched rayclusters rc .spec.managedBy "head cpu" "1 3"
    gone_everywhere raycluster rc
}
