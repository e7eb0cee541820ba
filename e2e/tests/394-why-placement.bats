#!/usr/bin/env bats
# Why a job does not run, from the manager alone (issue 13): layer 2, its
# pods on the worker that admitted it (condition Placement and Warning
# Events on the manager), data-aware dispatch (a worker lacking a PVC the
# job references gets no copy while another has it), and the kubectl
# plugin that prints both layers (`kubectl mkueue why`, `kubectl mkueue
# clusters`).

load helpers
load reconciler
load why

PORT=$((RC_METRICS_BASE + 94))

setup_file() {
    rc_bed_setup
    why_webhook_start mkueue-webhook-place
    rc_start rc-place "$PORT" --leader-elect=false
}

teardown_file() {
    stop_component rc-place
    why_webhook_stop mkueue-webhook-place
}

setup() {
    NS=$(fresh_ns place)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

# mkueue ARGS...: the plugin, as `kubectl mkueue` runs it, on the manager
# place_job NAME PARALLELISM [TEMPLATE-SPEC-LINES] [KUBECTL-FLAG]: a Job of
# the queue team-a (pods: $RESULT, default Running; $IMAGE; $CPU each)
place_job() {
    km apply ${4:-} -f - <<YAML
apiVersion: batch/v1
kind: Job
metadata: {namespace: $NS, name: $1, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  managedBy: kueue.x-k8s.io/multikueue
  suspend: true
  parallelism: $2
  completions: $2
  template:
    metadata:
      annotations: {mkueue.test/result: ${RESULT:-Running}}
    spec:
      restartPolicy: Never
${3:-}
      containers:
      - name: main
        image: ${IMAGE:-busybox}
        resources: {requests: {cpu: ${CPU:-100m}}}
YAML
}
placement() { rc_wl "$NS" "$1" "{.status.conditions[?(@.type==\"Placement\")].$2}"; }
place_has() { [[ "$(placement "$1" message)" == *"$2"* ]]; }
# events KIND NAME REASON: the messages of those Events about one object
events() {
    km -n "$NS" get events --field-selector "involvedObject.kind=$1,involvedObject.name=$2,reason=$3" \
        -o jsonpath='{range .items[*]}{.type} {.message}{"\n"}{end}' 2>/dev/null
}
has_event() { events "$1" "$2" "$3" | grep -qF -- "$4"; }
verdict() { mkueue why "job/$1" -n "$NS" | grep '^Verdict: '; }

@test "pods no worker node can take: Placement False on the manager, one Warning per reason, the plugin says layer 2" {
    # the fake nodes have no nvidia.com/gpu.product label: no node fits
    place_job gpu 2 "      nodeSelector: {nvidia.com/gpu.product: H100}" >/dev/null
    eventually 180 is_eq False placement gpu status
    cl=$(rc_cluster_of "$NS" gpu)
    [ -n "$cl" ]
    [ "$(placement gpu reason)" = Unschedulable ]
    eventually 120 place_has gpu "$cl: 2/2 pods Pending: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector"
    wl=$(rc_wl_name "$NS" gpu)
    eventually 30 has_event Workload "$wl" Unschedulable "Warning $cl: "
    eventually 30 has_event Job gpu Unschedulable "Warning $cl: "
    # two pods, any number of their updates: one Event per object
    [ "$(events Workload "$wl" Unschedulable | grep -c .)" = 1 ]
    [ "$(events Job gpu Unschedulable | grep -c .)" = 1 ]
    # admission went fine: layer 1 says so, the verdict names layer 2
    [ "$(rc_check_state "$NS" gpu)" = Ready ]
    out=$(mkueue why job/gpu -n "$NS")
    [[ "$out" == *"check multikueue-ac: Ready: The workload got reservation on \"$cl\""* ]]
    [[ "$out" == *"Placement:     False Unschedulable: $cl: 2/2 pods Pending: 0/2 nodes are available"* ]]
    [[ "$out" == *"Verdict: layer 2 (placement): $cl: 2/2 pods Pending: "* ]]
}

@test "an image the worker cannot pull: ImagePullBackOff with the image on the manager, True once it runs" {
    IMAGE=registry.example/train:v3 RESULT=ImagePullBackOff place_job pull 1 >/dev/null
    eventually 180 is_eq ImagePullBackOff placement pull reason
    cl=$(rc_cluster_of "$NS" pull)
    [ "$(placement pull message)" = "$cl: ImagePullBackOff for registry.example/train:v3 (1/1 pods)" ]
    eventually 30 has_event Job pull ImagePullBackOff "Warning $cl: ImagePullBackOff for registry.example/train:v3"
    eventually 30 is_eq "Verdict: layer 2 (placement): $cl: ImagePullBackOff for registry.example/train:v3 (1/1 pods)" verdict pull
    # the image can be pulled now (the pod starts): Placement turns True, nothing else is said
    k "$cl" -n "$NS" annotate pods -l batch.kubernetes.io/job-name=pull mkueue.test/result=Running --overwrite >/dev/null
    eventually 180 is_eq True placement pull status
    [ "$(placement pull reason)" = PodsStarted ]
    [ "$(placement pull message)" = "$cl: no pod is held back (1/1 running or ended)" ]
    eventually 30 is_eq "Verdict: running on $cl" verdict pull
}

@test "a PVC only worker-2 has: warned on apply, nominated and dispatched to worker-2 alone" {
    kw2 apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {namespace: $NS, name: dataset}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
YAML
    vol="      volumes: [{name: data, persistentVolumeClaim: {claimName: dataset}}]"
    # the webhook sees the PVC on worker-2 (metadata watches; the reconciler's as soon)
    seen() { local w; w=$(place_job data 1 "$vol" --dry-run=server 2>&1 >/dev/null);
             [[ "$w" == *"PVC $NS/dataset does not exist on worker-1"* && "$w" != *"on worker-2"* ]]; }
    eventually 60 seen
    out=$(place_job data 1 "$vol" 2>&1)
    [[ "$out" == *"Warning: PVC $NS/dataset does not exist on worker-1"* ]]
    [[ "$out" != *"on worker-2"* ]]
    eventually 180 has_cluster "$NS" data
    [ "$(rc_cluster_of "$NS" data)" = worker-2 ]
    wl=$(rc_wl_name "$NS" data)
    eventually 30 has_event Workload "$wl" MissingReferences \
        "Normal Not nominated, lacking what the job references: worker-1: PVC $NS/dataset"
    # worker-1 never got a copy
    [ -z "$(rc_remote_wls worker-1 "$NS")" ]
    [ -z "$(rc_remote_jobs worker-1 "$NS")" ]
    out=$(mkueue why job/data -n "$NS")
    [[ "$out" == *"worker:        worker-2"* ]]
    [[ "$out" == *"Normal MissingReferences: Not nominated, lacking what the job references: worker-1: PVC $NS/dataset"* ]]
}

@test "kubectl mkueue: layer 1 for a job over the manager's quota; clusters with their connection and queues" {
    CPU=20 place_job big 1 >/dev/null # the manager's quota: 16
    wait_quota() { verdict big | grep -q "^Verdict: layer 1 (admission): Waiting for quota on the manager: ClusterQueue team-a-cq"; }
    eventually 60 wait_quota
    out=$(mkueue clusters)
    echo "$out" | grep -Eq '^worker-1 +True +Active +[0-9]+ +Connected$'
    echo "$out" | grep -Eq '^worker-2 +True +Active +[0-9]+ +Connected$'
    echo "$out" | grep -Eq '^team-a-cq +multikueue-ac +worker-1,worker-2 +[0-9]+ +[0-9]+ +[0-9]+$'
}
