#!/usr/bin/env bats
# Preflight of data and runtime (issue 13): on `kubectl apply`, the
# validating webhook warns, never blocking, about each PVC, ConfigMap,
# Secret (imagePullSecrets too) and ServiceAccount the job's pod templates
# reference that a worker it can go to does not have. The webhook keeps
# only their names (metadata-only watches on the workers).

load helpers

WH_PORT=${MKUEUE_WEBHOOK_PORT:-16446}
WH_MPORT=${MKUEUE_WEBHOOK_METRICS_PORT:-16447}

setup_file() {
    local d=$MKUEUE_E2E_DIR/webhook-certs w ca
    "$MKUEUE_ROOT/certs/gen.sh" webhook "$d"
    km apply -f "$MKUEUE_ROOT/e2e/manifests/manager.yaml" >/dev/null
    kw1 apply -f "$MKUEUE_ROOT/e2e/manifests/worker.yaml" >/dev/null
    kw2 apply -f "$MKUEUE_ROOT/e2e/manifests/worker.yaml" >/dev/null
    for w in 1 2; do
        km -n mkueue-system create secret generic "worker-$w-kubeconfig" \
            --from-file=kubeconfig="$MKUEUE_E2E_DIR/kubeconfig/worker-$w.yaml" \
            --dry-run=client -o yaml | km apply -f - >/dev/null
    done
    km label ns kube-system kubernetes.io/metadata.name=kube-system --overwrite >/dev/null
    km label ns mkueue-system kubernetes.io/metadata.name=mkueue-system --overwrite >/dev/null
    start_component mkueue-webhook-pf "$BIN/mkueue-webhook" \
        --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/manager.yaml" --namespace mkueue-system \
        --cert-dir "$d" --bind-address 127.0.0.1 --port "$WH_PORT" \
        --metrics-bind-address 127.0.0.1 --metrics-port "$WH_MPORT"
    eventually 30 curl -sf "http://127.0.0.1:$WH_MPORT/readyz" >/dev/null
    for w in worker-1 worker-2; do
        eventually 30 bash -c "curl -sf http://127.0.0.1:$WH_MPORT/metrics |
            grep -qx 'mkueue_webhook_cache_synced{cluster=\"$w\"} 1'"
    done
    ca=$(base64 -w0 <"$d/ca.crt")
    km apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: mkueue-e2e-preflight}
webhooks:
- name: validate-job.mkueue.x-k8s.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 10
  clientConfig:
    url: https://127.0.0.1:$WH_PORT/validate-batch-v1-job
    caBundle: $ca
  namespaceSelector:
    matchExpressions:
    - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, mkueue-system]}
  objectSelector:
    matchExpressions:
    - {key: kueue.x-k8s.io/queue-name, operator: Exists}
  rules:
  - apiGroups: [batch]
    apiVersions: [v1]
    resources: [jobs]
    operations: [CREATE, UPDATE]
YAML
}

teardown_file() {
    km delete validatingwebhookconfiguration mkueue-e2e-preflight --ignore-not-found >/dev/null
    stop_component mkueue-webhook-pf
}

setup() {
    NS=$(fresh_ns pf)
    local c
    for c in manager worker-1 worker-2; do
        k "$c" create ns "$NS" >/dev/null
        k "$c" apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: team-a}
spec: {clusterQueue: team-a-cq}
YAML
    done
}

teardown() {
    teardown_common
    local c
    for c in manager worker-1 worker-2; do k "$c" delete ns "$NS" --wait=false >/dev/null 2>&1 || true; done
}

job() {
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: ${1:-train}
  namespace: $NS
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  template:
    spec:
      restartPolicy: Never
      serviceAccountName: trainer
      imagePullSecrets: [{name: regcred}]
      volumes:
      - {name: data, persistentVolumeClaim: {claimName: dataset}}
      - {name: opt, configMap: {name: maybe, optional: true}}
      containers:
      - name: c
        image: registry.example/train:v3
        envFrom: [{configMapRef: {name: settings}}]
YAML
}

# apply_warnings: what `kubectl apply` (server dry run) warns about a new job
apply_warnings() { job dry | km apply --dry-run=server -f - 2>&1 >/dev/null | grep '^Warning: ' || true; }
warns() { apply_warnings | grep -qxF "Warning: $1"; }

@test "a job referencing objects a worker lacks is warned about per worker, and never blocked" {
    # worker-2 has them all, worker-1 only the ServiceAccount
    for c in worker-1 worker-2; do k "$c" -n "$NS" create serviceaccount trainer >/dev/null; done
    kw2 apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {namespace: $NS, name: dataset}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {namespace: $NS, name: settings}
---
apiVersion: v1
kind: Secret
metadata: {namespace: $NS, name: regcred}
YAML
    eventually 30 warns "PVC $NS/dataset does not exist on worker-1"
    w=$(apply_warnings)
    [[ "$w" == *"Warning: ConfigMap $NS/settings does not exist on worker-1"* ]]
    [[ "$w" == *"Warning: Secret $NS/regcred does not exist on worker-1"* ]]
    [[ "$w" != *worker-2* ]]
    [[ "$w" != *ServiceAccount* ]]
    [[ "$w" != *maybe* ]] # optional
    # never blocking: the job is created, with the same warnings
    run km apply -f - <<<"$(job train)"
    [ "$status" -eq 0 ]
    km -n "$NS" get job train >/dev/null
    [[ "$output" == *"Warning: PVC $NS/dataset does not exist on worker-1"* ]]
    # the PVC made on worker-1 too: that warning goes
    kw1 apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {namespace: $NS, name: dataset}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
YAML
    gone() { ! warns "PVC $NS/dataset does not exist on worker-1"; }
    eventually 30 gone
    warns "Secret $NS/regcred does not exist on worker-1"
}
