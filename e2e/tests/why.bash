# Helpers of the why-Pending scenarios (39x: issue 13). Loaded after helpers.bash.

WH_PORT=${MKUEUE_WEBHOOK_PORT:-16446}
WH_MPORT=${MKUEUE_WEBHOOK_METRICS_PORT:-16447}

# why_webhook_start NAME: the webhook (validation of batch/v1 Jobs only, with
# the preflight) against the manager and both workers, its caches synced.
why_webhook_start() {
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
    start_component "$1" "$BIN/mkueue-webhook" \
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

# why_webhook_stop NAME
why_webhook_stop() {
    km delete validatingwebhookconfiguration mkueue-e2e-preflight --ignore-not-found >/dev/null
    stop_component "$1"
}
