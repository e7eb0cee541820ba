#!/usr/bin/env bats
# mkueue-webhook on the real manager: registered with Mutating and
# Validating WebhookConfigurations (caBundle from certs/gen.sh), it refuses
# jobs whose queue preconditions fail on the manager or on a worker, with a
# message naming what is missing, and defaults managedBy/suspend for jobs of
# MultiKueue queues. The MultiKueue chain is e2e/manifests/manager.yaml, the
# workers get worker.yaml, and the kubeconfig Secrets come from the bed.
#
# Ports: MKUEUE_WEBHOOK_PORT (HTTPS) and MKUEUE_WEBHOOK_METRICS_PORT.

load helpers

WH_LOG() { cat "$MKUEUE_E2E_DIR/logs/mkueue-webhook.log"; }
metrics() { curl -sf "http://127.0.0.1:$WH_MPORT/metrics"; }
# requests the webhook has answered so far
answered() { metrics | awk '/^mkueue_webhook_requests_total/ {n += $2} END {print n + 0}'; }

# The webhooks, for jobs and JobSets, on the per-kind paths. kube-system and
# mkueue's namespace are excluded by name (invariant 15).
register() {
    local kind name
    for kind in Mutating Validating; do
        name=mkueue-e2e-mutate
        [ $kind = Validating ] && name=mkueue-e2e-validate
        register_webhooks $kind $name "$MKUEUE_E2E_DIR/webhook-certs" \
            "$WH_NS_SELECTOR" "" "batch v1 jobs job CREATE,UPDATE" \
            "jobset.x-k8s.io v1alpha2 jobsets jobset CREATE,UPDATE"
    done
}

# job NS NAME [QUEUE]: a batch Job manifest.
job() {
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $2
  namespace: $1
  labels: {app: e2e${3:+, kueue.x-k8s.io/queue-name: $3}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
YAML
}

export -f job

# jobset NS NAME QUEUE: a JobSet manifest (its CRD keeps spec.managedBy).
jobset() {
    cat <<YAML
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: $2
  namespace: $1
  labels: {kueue.x-k8s.io/queue-name: $3}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: c, image: busybox}]
YAML
}

# on CLUSTER... -- ns NS [LQ]: namespace NS (and LocalQueue LQ -> team-a-cq) on each cluster.
queue_on() {
    local ns=$1 lq=$2 c
    shift 2
    for c in "$@"; do
        k "$c" create ns "$ns" >/dev/null 2>&1 || true
        [ -z "$lq" ] || k "$c" apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $ns, name: $lq}
spec: {clusterQueue: team-a-cq}
YAML
    done
}

setup_file() {
    bed_queues
    wh_start mkueue-webhook "$MKUEUE_E2E_DIR/webhook-certs"
    register
    # the apiserver picks the configurations up asynchronously
    PROBE=wh-probe-$RANDOM
    km create ns "$PROBE" >/dev/null
    eventually 30 bash -c "! job $PROBE p missing-queue | kubectl --context manager apply --dry-run=server -f - >/dev/null 2>&1" || {
        WH_LOG >&3
        return 1
    }
    km delete ns "$PROBE" --wait=false >/dev/null
}

teardown_file() {
    # first: a webhook left registered without its server fails every job write
    km delete mutatingwebhookconfiguration mkueue-e2e-mutate --ignore-not-found >/dev/null
    km delete validatingwebhookconfiguration mkueue-e2e-validate --ignore-not-found >/dev/null
    stop_component mkueue-webhook
}

setup() {
    NS=$(fresh_ns wh)
}

teardown() {
    teardown_common
    if [ -z "${BATS_TEST_COMPLETED:-}" ]; then WH_LOG | tail -n 40 | sed 's/^/# /' >&3; fi
    local c
    for c in "${CLUSTERS[@]}"; do k "$c" delete ns "$NS" --wait=false >/dev/null 2>&1 || true; done
}

@test "a job whose LocalQueue does not exist is refused with a clear message" {
    queue_on "$NS" "" manager worker-1 worker-2
    run km apply -f - <<<"$(job "$NS" j1 team-x)"
    [ "$status" -ne 0 ]
    [[ $output == *"denied the request: LocalQueue team-x does not exist in namespace $NS"* ]]
    run km -n "$NS" get job j1
    [ "$status" -ne 0 ]
    # a malformed queue name is refused as Kubernetes would word it
    run km apply -f - <<<"$(job "$NS" j2 Team_A)"
    [ "$status" -ne 0 ]
    [[ $output == *'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Team_A"'* ]]
    metrics | grep -q 'mkueue_webhook_denials_total{kind="Job",reason="localqueue_not_found"}'
}

@test "a namespace or LocalQueue missing on a worker is refused, naming the worker" {
    queue_on "$NS" team-a manager worker-1
    run km apply -f - <<<"$(job "$NS" j1 team-a)"
    [ "$status" -ne 0 ]
    [[ $output == *"namespace $NS does not exist on worker-2"* ]]
    [[ $output != *"worker-1"* ]]
    # the namespace appears on worker-2, still without the LocalQueue
    queue_on "$NS" "" worker-2
    eventually 20 bash -c "job $NS j1 team-a | kubectl --context manager apply -f - 2>&1 |
        grep -q 'LocalQueue $NS/team-a does not exist on worker-2'"
    # and with it, the job goes through
    queue_on "$NS" team-a worker-2
    eventually 20 bash -c "job $NS j1 team-a | kubectl --context manager apply -f - >/dev/null 2>&1"
}

@test "a valid job is stored with the mutation" {
    queue_on "$NS" team-a manager worker-1 worker-2
    # batch Job: the stored object carries the mutation, and the webhook logged its patch
    run km apply -f - <<<"$(job "$NS" j1 team-a)"
    [ "$status" -eq 0 ]
    [ "$(jp manager -n "$NS" job j1 -o jsonpath='{.spec.managedBy} {.spec.suspend}')" = \
        "kueue.x-k8s.io/multikueue true" ]
    line=$(WH_LOG | grep '"msg":"patched"' | grep "\"namespace\":\"$NS\"" | grep '"name":"j1"' | tail -n 1)
    [[ $line == *'\"path\":\"/spec/managedBy\",\"value\":\"kueue.x-k8s.io/multikueue\"}'* ]]
    # JobSet keeps the fields: the full effect is stored
    run km apply -f - <<<"$(jobset "$NS" js1 team-a)"
    [ "$status" -eq 0 ]
    [ "$(jp manager -n "$NS" jobset js1 -o jsonpath='{.spec.managedBy} {.spec.suspend}')" = \
        "kueue.x-k8s.io/multikueue true" ]
    # unknown fields survive the patch
    [ "$(jp manager -n "$NS" jobset js1 -o jsonpath='{.spec.replicatedJobs[0].replicas}')" = 2 ]
    # a foreign controller's managedBy is left alone (with a warning)
    run km apply -f - <<<"$(jobset "$NS" js2 team-a | sed 's/^spec:/spec:\n  managedBy: example.com\/other/')"
    [ "$status" -eq 0 ]
    [[ $output == *"Warning: spec.managedBy is example.com/other"* ]]
    [ "$(jp manager -n "$NS" jobset js2 -o jsonpath='{.spec.managedBy}')" = example.com/other ]
    # the queue label cannot change under a running (unsuspended) JobSet
    km -n "$NS" patch jobset js1 --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
    run km -n "$NS" label jobset js1 kueue.x-k8s.io/queue-name=other --overwrite
    [ "$status" -ne 0 ]
    [[ $output == *"field is immutable while the JobSet is dispatched or running"* ]]
}

@test "a namespace with a LocalQueue named default gets it on jobs without a queue" {
    queue_on "$NS" default manager worker-1 worker-2
    run km apply -f - <<<"$(job "$NS" j1)"
    [ "$status" -eq 0 ]
    [ "$(jp manager -n "$NS" job j1 -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = default ]
}

@test "kubectl apply --dry-run=server gives the same answers with no side effects" {
    queue_on "$NS" team-a manager worker-1
    run km apply --dry-run=server -f - <<<"$(job "$NS" j1 team-a)"
    [ "$status" -ne 0 ]
    [[ $output == *"namespace $NS does not exist on worker-2"* ]]
    queue_on "$NS" team-a worker-2
    eventually 20 bash -c "job $NS j1 team-a | kubectl --context manager apply --dry-run=server -f - >/dev/null 2>&1"
    run km apply --dry-run=server -o jsonpath='{.spec.managedBy}' -f - <<<"$(jobset "$NS" js1 team-a)"
    [ "$status" -eq 0 ]
    [ "$output" = kueue.x-k8s.io/multikueue ]
    run km -n "$NS" get jobset js1
    [ "$status" -ne 0 ]
    run km -n "$NS" get job j1
    [ "$status" -ne 0 ]
    WH_LOG | grep "\"namespace\":\"$NS\"" | grep -q '"dryRun":"true"'
}

@test "kube-system is never blocked" {
    local name=wh-e2e-$BATS_TEST_NUMBER-$RANDOM before
    before=$(answered)
    run km apply -f - <<<"$(job kube-system "$name" no-such-queue)"
    km -n kube-system delete job "$name" --wait=false >/dev/null 2>&1 || true
    [ "$status" -eq 0 ]
    # not even asked: the registration excludes it (the webhook would allow it too)
    [ "$(answered)" = "$before" ]
}
