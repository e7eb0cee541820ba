#!/usr/bin/env bats
# mkueue-reconciler --mode with-kueue on the test bed's optional 4th cluster
# manager-kueue: real Kueue there (MultiKueue controller off) creates the
# Workloads, reserves quota and evicts; mkueue is only the controller of the
# kueue.x-k8s.io/multikueue check, dispatching to worker-1/worker-2.
# Alone: MKUEUE_E2E_KEEP=1 e2e/run.sh e2e/tests/37-with-kueue.bats

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 7))
MK=manager-kueue

kmk() { k "$MK" "$@"; }

setup_file() {
    "$MKUEUE_ROOT/e2e/testbed.sh" up-cluster "$MK"
    kw1 apply -f "$MKUEUE_ROOT/e2e/manifests/worker.yaml" >/dev/null
    kw2 apply -f "$MKUEUE_ROOT/e2e/manifests/worker.yaml" >/dev/null
    kmk apply -f "$MKUEUE_ROOT/e2e/manifests/manager.yaml" >/dev/null
    local i
    for i in 1 2; do
        kmk -n mkueue-system create secret generic "worker-$i-kubeconfig" \
            --from-file=kubeconfig="$MKUEUE_E2E_DIR/kubeconfig/worker-$i.yaml" \
            --dry-run=client -o yaml | kmk apply -f - >/dev/null
    done
    start_component rc-wk "$RC_BIN" --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/$MK.yaml" \
        --metrics-addr "127.0.0.1:$PORT" --mode with-kueue --leader-elect=false \
        --integrations batch/job --gc-interval 5s
    eventually 30 curl -sf "http://127.0.0.1:$PORT/readyz" -o /dev/null
}

teardown_file() {
    stop_component rc-wk
    # the default bed's scenarios and 99-teardown count without it
    [ "${MKUEUE_E2E_KEEP_MANAGER_KUEUE:-0}" = 1 ] || "$MKUEUE_ROOT/e2e/testbed.sh" down-cluster "$MK"
}

setup() {
    NS=$(fresh_ns wk)
    local c
    for c in "$MK" worker-1 worker-2; do
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
    if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
        {
            echo "# ---- $MK"
            kmk -n "$NS" get workloads -o yaml --show-managed-fields | sed 's/^/# /'
            kmk -n "$NS" get jobs -o wide | sed 's/^/# /'
            dump_state
            grep -v '"informer"' "$MKUEUE_E2E_DIR/logs/kueue-$MK.log" | tail -n 30 | cut -c1-600 | sed 's/^/# /'
        } >&3 2>&1
    fi
    local c
    for c in "$MK" worker-1 worker-2; do k "$c" delete ns "$NS" --wait=false >/dev/null 2>&1 || true; done
}

# A Job for queue team-a as a user writes it for MultiKueue (Kueue's webhook
# suspends it; with MultiKueue off it does not default managedBy).
wk_job() {
    kmk apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  namespace: $NS
  name: $1
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  managedBy: kueue.x-k8s.io/multikueue
  parallelism: 1
  completions: 1
  template:
    metadata:
      annotations: {mkueue.test/result: Running}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["true"]
        resources: {requests: {cpu: 100m}}
YAML
}

wl_name() { kmk -n "$NS" get workloads -o jsonpath="{.items[?(@.metadata.ownerReferences[0].name==\"$1\")].metadata.name}" 2>/dev/null; }
wl() { local w; w=$(wl_name "$1"); [ -n "$w" ] && kmk -n "$NS" get workload "$w" -o jsonpath="$2" 2>/dev/null; }
check() { wl "$1" "{.status.admissionChecks[0].$2}"; }
cond() { wl "$1" "{.status.conditions[?(@.type==\"$2\")].status}"; }
# "<state> <retryCount>" of the check, e.g. "Ready 1"
check_and_retries() { echo "$(check "$1" state) $(check "$1" retryCount)"; }

@test "with-kueue: Kueue admits, mkueue dispatches to one worker; the Job runs there and finishes on the manager" {
    wk_job run
    eventually 30 is_eq Ready check run state
    c=$(wl run '{.status.clusterName}')
    [[ "$c" == worker-[12] ]]
    [ -z "$(wl run '{.status.nominatedClusterNames}')" ]
    # Kueue, not mkueue, reserved the quota and admitted
    eq True "$(cond run QuotaReserved)"
    eventually 10 is_eq True cond run Admitted
    eq team-a-cq "$(wl run '{.status.admission.clusterQueue}')"
    # Kueue un-suspends the manager Job; managedBy keeps its pods off the manager
    eventually 10 is_eq false jp "$MK" -n "$NS" job run -o jsonpath='{.spec.suspend}'
    eventually 20 is_eq Running jp "$c" -n "$NS" pods -l job-name=run -o jsonpath='{.items[0].status.phase}'
    eq 0 "$(count_of "$MK" pods -n "$NS")"
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    eventually 10 is_eq "" rc_remote_wls "$other" "$NS"
    rc_finish_pod "$c" "$NS" run
    eventually 20 is_eq True jp "$MK" -n "$NS" job run -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}'
    eventually 20 is_eq True cond run Finished
    eventually 20 no_remote_objects "$NS"
}

# the reasons of the Workload's recorded evictions, e.g. "AdmissionCheck"
evictions() { wl "$1" '{.status.schedulingStats.evictions[*].reason}'; }

@test "with-kueue: evicted on the worker, Kueue evicts, clears clusterName, admits again; mkueue dispatches again and the Job finishes" {
    wk_job evict
    eventually 30 is_eq Ready check evict state
    c=$(wl evict '{.status.clusterName}')
    eventually 20 has_pods "$c" "$NS" job-name=evict
    # The worker evicts its copy (deactivated there): mkueue sets Retry and
    # Kueue evicts on the manager. Its admission-status apply resets the
    # check to Pending (retryCount 1) and clears clusterName, which works
    # only when mkueue wrote it under Kueue's field manager; Kueue stops the
    # Job (suspend, pod template restored: refused by Kubernetes while the
    # mirrored status still shows active pods, so mkueue shows it stopped),
    # releases the quota, admits again, and mkueue dispatches anew.
    k "$c" -n "$NS" patch workload "$(wl_name evict)" --type=merge -p '{"spec":{"active":false}}' >/dev/null
    eventually 60 is_eq AdmissionCheck evictions evict
    eventually 90 is_eq "Ready 1" check_and_retries evict
    c2=$(wl evict '{.status.clusterName}')
    [[ "$c2" == worker-[12] ]]
    eq "" "$(wl evict '{.status.nominatedClusterNames}')"
    # clusterName and the admission status are Kueue's field manager's alone
    eq kueue-admission "$(kmk -n "$NS" get workload "$(wl_name evict)" --show-managed-fields \
        -o jsonpath='{.metadata.managedFields[?(@.operation=="Apply")].manager}')"
    eventually 10 is_eq True cond evict Admitted
    eventually 30 has_pods "$c2" "$NS" job-name=evict
    eventually 10 is_eq false jp "$MK" -n "$NS" job evict -o jsonpath='{.spec.suspend}'
    rc_finish_pod "$c2" "$NS" evict
    eventually 30 is_eq True jp "$MK" -n "$NS" job evict -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}'
    eventually 20 is_eq True cond evict Finished
    eventually 20 no_remote_objects "$NS"
}
