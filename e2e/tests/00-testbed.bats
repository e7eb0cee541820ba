#!/usr/bin/env bats
# The test bed itself: three current Kubernetes clusters, Kueue's API
# (mkueue's CRDs on the manager, real Kueue on the workers), KWOK running
# pods, the JobSet controller, and a manager that runs nothing of ours.

load helpers

setup() { NS=$(fresh_ns tb); }

teardown() {
    teardown_common
    if [ -f "$MKUEUE_E2E_DIR/pids-worker-3" ]; then "$MKUEUE_ROOT/e2e/testbed.sh" down-cluster worker-3; fi
    for c in "${CLUSTERS[@]}"; do k "$c" delete ns "$NS" --ignore-not-found --wait=false >/dev/null; done
}

# a Job for NS on CONTEXT: job CONTEXT NAME RESULT [QUEUE]
job() {
    local labels="{}"
    [ -n "${4:-}" ] && labels="{kueue.x-k8s.io/queue-name: $4}"
    k "$1" apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {namespace: $NS, name: $2, labels: $labels}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {mkueue.test/result: $3, mkueue.test/duration: 1s}
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, resources: {requests: {cpu: 100m}}}
YAML
}

@test "every cluster reports the Kubernetes version it was built as" {
    want=$(awk '$1 == "kubernetes" { print $2 }' "$MKUEUE_BED/versions")
    [[ "$want" == v1.3[4-9].* ]]
    for c in "${CLUSTERS[@]}"; do
        run k "$c" version -o json
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | jq -r .serverVersion.gitVersion)" = "$want" ]
        [ "$(echo "$output" | jq -r .clientVersion.gitVersion)" = "$want" ]
    done
}

@test "each cluster serves Kueue's API and lists workloads and localqueues" {
    for c in "${CLUSTERS[@]}"; do
        run k "$c" get workloads,localqueues -A
        [ "$status" -eq 0 ]
        run k "$c" api-resources --api-group=kueue.x-k8s.io -o name
        [ "$status" -eq 0 ]
        for r in localqueues clusterqueues admissionchecks multikueueconfigs multikueueclusters workloads; do
            [[ "$output" == *"$r.kueue.x-k8s.io"* ]]
        done
    done
}

@test "a Workload written as v1beta1 is served as v1beta2 on the manager" {
    k manager create ns $NS
    km apply -f - <<YAML
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: wl-v1beta1, namespace: $NS}
spec:
  queueName: team-a
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: c, image: busybox}]
YAML
    run km get workloads.v1beta2.kueue.x-k8s.io -n "$NS" wl-v1beta1 -o jsonpath='{.apiVersion} {.spec.queueName}'
    [ "$status" -eq 0 ]
    [ "$output" = "kueue.x-k8s.io/v1beta2 team-a" ]
}

@test "KWOK nodes are Ready with CPU, memory and GPUs on every cluster" {
    for c in "${CLUSTERS[@]}"; do
        [ "$(k "$c" get nodes -l type=kwok -o name | wc -l)" -ge 2 ]
        run k "$c" get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {.status.allocatable.nvidia\.com/gpu}{"\n"}{end}'
        [ "$status" -eq 0 ]
        ! echo "$output" | grep -v '^True 4$' || false
    done
}

@test "KWOK runs a Job's pod to success, and to failure when the pod asks" {
    k worker-1 create ns "$NS"
    job worker-1 ok Succeeded
    job worker-1 bad Failed
    eventually 30 is_eq True jp worker-1 -n "$NS" job ok -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}'
    eventually 30 is_eq True jp worker-1 -n "$NS" job bad -o jsonpath='{.status.conditions[?(@.type=="Failed")].status}'
    [ "$(jp worker-1 -n "$NS" pods -l job-name=ok -o jsonpath='{.items[0].status.phase}')" = Succeeded ]
    [[ "$(jp worker-1 -n "$NS" pods -l job-name=ok -o jsonpath='{.items[0].spec.nodeName}')" == worker-1-node-[12] ]]
}

@test "real Kueue on a worker admits a queued Job, which then runs" {
    kw1 apply -f "$MKUEUE_ROOT/e2e/manifests/worker.yaml" >/dev/null
    k worker-1 create ns "$NS"
    kw1 apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: team-a}
spec: {clusterQueue: team-a-cq}
YAML
    job worker-1 queued Succeeded team-a
    # Kueue's webhook suspended it, Kueue's controller made the Workload and admitted it
    eventually 30 is_eq True jp worker-1 -n "$NS" workloads -o jsonpath='{.items[0].status.conditions[?(@.type=="Admitted")].status}'
    eventually 30 is_eq True jp worker-1 -n "$NS" job queued -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}'
    eventually 30 is_eq True jp worker-1 -n "$NS" workloads -o jsonpath='{.items[0].status.conditions[?(@.type=="Finished")].status}'
}

@test "the worker's JobSet controller creates the Jobs and KWOK runs them" {
    k worker-1 create ns "$NS"
    kw1 apply -f - >/dev/null <<YAML
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {namespace: $NS, name: js}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        template:
          metadata:
            annotations: {mkueue.test/result: Succeeded, mkueue.test/duration: 1s}
          spec:
            restartPolicy: Never
            containers: [{name: main, image: busybox}]
YAML
    eventually 30 is_eq 2 count_of worker-1 jobs -n "$NS" -l jobset.sigs.k8s.io/jobset-name=js
    eventually 60 is_eq True jp worker-1 -n "$NS" jobset js -o jsonpath='{.status.conditions[?(@.type=="Completed")].status}'
}

@test "the manager runs nothing of MultiKueue's: a managedBy Job makes no pod, a gated Pod stays unscheduled" {
    k manager create ns "$NS"
    km apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {namespace: $NS, name: managed}
spec:
  managedBy: kueue.x-k8s.io/multikueue
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {namespace: $NS, name: gated}
spec:
  schedulingGates: [{name: kueue.x-k8s.io/admission}]
  containers: [{name: main, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {namespace: $NS, name: free, annotations: {mkueue.test/result: Running}}
spec:
  containers: [{name: main, image: busybox}]
YAML
    # the control: an ungated pod on the manager is scheduled and run by KWOK
    eventually 30 is_eq Running jp manager -n "$NS" pod free -o jsonpath='{.status.phase}'
    sleep 3
    [ "$(jp manager -n "$NS" job managed -o jsonpath='{.spec.managedBy}')" = kueue.x-k8s.io/multikueue ]
    [ "$(count_of manager pods -n "$NS" -l job-name=managed)" = 0 ]
    [ -z "$(jp manager -n "$NS" pod gated -o jsonpath='{.spec.nodeName}')" ]
    [ "$(jp manager -n "$NS" pod gated -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" = SchedulingGated ]
}

@test "the apiserver kubeconfigs use embedded credentials only" {
    for c in "${CLUSTERS[@]}"; do
        run grep -E 'certificate-authority:|client-certificate:|client-key:' "$MKUEUE_E2E_DIR/kubeconfig/$c.yaml"
        [ "$status" -eq 1 ]
    done
}

@test "the ports of the largest bed (8 workers, manager-kueue) are all distinct and clear of the scenarios' ports" {
    ports=$("$MKUEUE_ROOT/e2e/testbed.sh" ports 2>/dev/null)
    # etcd 2; manager 1; manager-kueue API and Kueue 3; per worker API and
    # Kueue, JobSet, LWS webhook and health 7
    [ "$(echo "$ports" | grep -c .)" -eq $((2 + 1 + 3 + 8 * 7)) ]
    eq "" "$(echo "$ports" | awk '{ print $3 }' | sort | uniq -d)"
    # mkueue-webhook's ports and the reconciler's metrics ports
    # (RC_METRICS_BASE + 0 .. 99) of the scenarios
    eq "" "$(echo "$ports" | awk -v a="$WH_PORT" -v b="$WH_MPORT" -v rc="${RC_METRICS_BASE:-18300}" \
        '$3 == a || $3 == b || ($3 >= rc && $3 < rc + 100)')"
}

@test "up-cluster worker-3 adds a lean worker whose Kueue admits a Job KWOK runs; down-cluster takes it away" {
    MKUEUE_WORKER_EXTRAS=0 "$MKUEUE_ROOT/e2e/testbed.sh" up-cluster worker-3
    eval "$("$MKUEUE_ROOT/e2e/testbed.sh" env)"
    eq "worker-1 worker-2 worker-3" "$MKUEUE_BED_WORKERS"
    # apiserver, controller-manager, scheduler, KWOK, Kueue: no JobSet or LWS
    pids=$(awk '{ print $1 }' "$MKUEUE_E2E_DIR/pids-worker-3")
    [ "$(echo "$pids" | wc -w)" -eq 5 ]
    run k worker-3 get crd jobsets.jobset.x-k8s.io
    [ "$status" -ne 0 ]
    # the manager's side for 3 workers, valid for its API
    k manager create ns "$NS"
    "$MKUEUE_ROOT/e2e/scripts/workers-manifest.sh" 3 "$NS" >"$BATS_TEST_TMPDIR/mk.yaml"
    km apply --dry-run=server -f "$BATS_TEST_TMPDIR/mk.yaml" >/dev/null
    eq "worker-1 worker-2 worker-3" "$(awk '/^  - worker-/ { printf "%s%s", s, $2; s = " " }' "$BATS_TEST_TMPDIR/mk.yaml")"
    eq 3 "$(grep -c '^kind: MultiKueueCluster$' "$BATS_TEST_TMPDIR/mk.yaml")"
    # and worker.yaml applied on worker-3: Kueue there admits a queued Job
    k worker-3 create ns "$NS"
    k worker-3 apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: team-a}
spec: {clusterQueue: team-a-cq}
YAML
    job worker-3 queued Succeeded team-a
    eventually 60 is_eq True jp worker-3 -n "$NS" workloads -o jsonpath='{.items[0].status.conditions[?(@.type=="Admitted")].status}'
    eventually 60 is_eq True jp worker-3 -n "$NS" job queued -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}'
    [[ "$(jp worker-3 -n "$NS" pods -l job-name=queued -o jsonpath='{.items[0].spec.nodeName}')" == worker-3-node-[12] ]]

    "$MKUEUE_ROOT/e2e/testbed.sh" down-cluster worker-3
    for p in $pids; do ! kill -0 "$p" 2>/dev/null; done
    [ ! -e "$MKUEUE_E2E_DIR/pids-worker-3" ]
    eq "worker-1 worker-2" "$(echo $(cat "$MKUEUE_E2E_DIR/workers"))"
    run kubectl config get-contexts worker-3
    [ "$status" -ne 0 ]
}
