#!/usr/bin/env bats
# Preflight of data and runtime (issue 13): on `kubectl apply`, the
# validating webhook warns, never blocking, about each PVC, ConfigMap,
# Secret (imagePullSecrets too) and ServiceAccount the job's pod templates
# reference that a worker it can go to does not have. The webhook keeps
# only their names (metadata-only watches on the workers).

load helpers
load why

setup_file() {
    why_webhook_start mkueue-webhook-pf
}

teardown_file() {
    why_webhook_stop mkueue-webhook-pf
}

setup() {
    NS=$(fresh_ns pf)
    bed_ns "$NS"
}

teardown() {
    teardown_common
    bed_ns_delete "$NS"
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
