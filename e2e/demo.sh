#!/usr/bin/env bash
# `make demo`: three local clusters, mkueue installed with helm on the
# manager, queues on every cluster, and a Job run across clusters, narrated.
# Exits 0 only when every step happened. The clusters and both binaries keep
# running afterwards for you to explore; `make e2e-down` stops everything.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
NS=mkueue-system
WH_PORT=${MKUEUE_DEMO_WEBHOOK_PORT:-18443}
WH_METRICS=${MKUEUE_DEMO_WEBHOOK_METRICS_PORT:-18444}
RC_METRICS=${MKUEUE_DEMO_RECONCILER_METRICS_PORT:-18445}

if [ -t 1 ]; then bold=$'\e[1m' dim=$'\e[2m' green=$'\e[32m' off=$'\e[0m'; else bold="" dim="" green="" off=""; fi
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$off"; }
say() { printf '    %s\n' "$*"; }
good() { printf '    %s✔ %s%s\n' "$green" "$*" "$off"; }
show() { printf '    %s$ %s%s\n' "$dim" "$*" "$off"; "$@" 2>&1 | sed 's/^/      /'; return "${PIPESTATUS[0]}"; }
fail() {
    printf '\n%sdemo failed:%s %s\n' "$bold" "$off" "$*" >&2
    printf 'logs: %s/logs/ (mkueue-webhook.log, mkueue-reconciler.log)\n' "$MKUEUE_E2E_DIR" >&2
    exit 1
}
# wait_for SECONDS WHAT CMD...: retries CMD until it succeeds
wait_for() {
    local deadline=$((SECONDS + $1)) what=$2; shift 2
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || fail "timed out waiting for $what"
        sleep 0.3
    done
}
km() { kubectl --context manager "$@"; }
on() { kubectl --context "$1" "${@:2}"; }
get() { on "$1" get "${@:2}" 2>/dev/null; }

# start NAME CMD...: one of our binaries in the background, stopped by `make e2e-down`
start() {
    local name=$1; shift
    mkdir -p "$MKUEUE_E2E_DIR/run" "$MKUEUE_E2E_DIR/logs"
    [ -f "$MKUEUE_E2E_DIR/run/$name.pid" ] && kill -TERM -- "-$(cat "$MKUEUE_E2E_DIR/run/$name.pid")" 2>/dev/null && sleep 1
    setsid "$@" >"$MKUEUE_E2E_DIR/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$MKUEUE_E2E_DIR/run/$name.pid"
}

step "1. Three Kubernetes clusters on 127.0.0.1: manager, worker-1, worker-2"
"$HERE/testbed.sh" up
eval "$("$HERE/testbed.sh" env)" # KUBECONFIG, the bed's kubectl and helm
show kubectl config get-contexts
show kubectl --context worker-1 version
show kubectl --context worker-1 get nodes
say "Each worker runs real Kueue ($(awk '$1 == "kueue" { print $2 }' "$MKUEUE_BED/versions")); KWOK's fake nodes run the pods."

step "2. Namespace ml-demo and LocalQueue team-a on every cluster; MultiKueue objects on the manager"
for c in worker-1 worker-2; do show kubectl --context "$c" apply -f "$HERE/manifests/worker.yaml"; done
show kubectl --context manager apply -f "$HERE/manifests/manager.yaml"
for c in worker-1 worker-2; do
    km -n "$NS" create secret generic "$c-kubeconfig" \
        --from-file=kubeconfig="$MKUEUE_E2E_DIR/kubeconfig/$c.yaml" --dry-run=client -o yaml | km apply -f - >/dev/null
done
good "Secrets worker-1-kubeconfig and worker-2-kubeconfig hold each worker's kubeconfig"

step "3. helm install mkueue on the manager (binaries run on this host: webhook at https://127.0.0.1:$WH_PORT)"
show "$HELM" --kube-context manager upgrade --install mkueue "$ROOT/charts/mkueue" --namespace "$NS" \
    -f "$ROOT/charts/mkueue/values-examples/local-dev.yaml" --set webhook.url="https://127.0.0.1:$WH_PORT"
start mkueue-webhook "$ROOT/bin/mkueue-webhook" --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/manager.yaml" \
    --namespace "$NS" --bind-address 127.0.0.1 --port "$WH_PORT" \
    --metrics-bind-address 127.0.0.1 --metrics-port "$WH_METRICS" \
    --cert-dir "$MKUEUE_E2E_DIR/demo-certs" --cert-secret mkueue-webhook-tls \
    --cert-service mkueue-webhook --cert-sans localhost,127.0.0.1 \
    --mutating-config mkueue-mutating --validating-config mkueue-validating
start mkueue-reconciler "$ROOT/bin/mkueue-reconciler" --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/manager.yaml" \
    --namespace "$NS" --metrics-addr "127.0.0.1:$RC_METRICS" --worker-lost-timeout 15m
wait_for 60 "the webhook to be ready" curl -fsS "http://127.0.0.1:$WH_METRICS/readyz"
wait_for 60 "the reconciler to be ready" curl -fsS "http://127.0.0.1:$RC_METRICS/readyz"
good "mkueue-webhook made its certificate, patched the caBundle and is ready"
good "mkueue-reconciler is ready"
connected() { [ "$(get manager multikueuecluster "$1" -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" = True ]; }
wait_for 60 "worker-1 and worker-2 to be connected" eval 'connected worker-1 && connected worker-2'
show kubectl --context manager get multikueueclusters
show kubectl --context manager get admissioncheck multikueue-ac -o jsonpath='{.status.conditions[0].reason}: {.status.conditions[0].message}{"\n"}'

step "4. A job whose namespace is missing on the workers is refused at kubectl apply"
km apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: not-on-workers}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-a, namespace: not-on-workers}
spec: {clusterQueue: team-a-cq}
YAML
if out=$(km -n not-on-workers create -f - 2>&1 <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: refused
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
YAML
); then
    fail "the webhook let a job through whose namespace is missing on the workers"
fi
say "$out"
good "refused, naming each worker"
km delete ns not-on-workers --wait=false >/dev/null

step "5. kubectl apply -f e2e/manifests/sample-job.yaml on the manager"
if km get -f "$HERE/manifests/sample-job.yaml" >/dev/null 2>&1; then
    say "(removing the job of an earlier run first)"
    km delete -f "$HERE/manifests/sample-job.yaml" --wait=true >/dev/null
fi
show kubectl --context manager apply -f "$HERE/manifests/sample-job.yaml"
JOB=$(km apply -f "$HERE/manifests/sample-job.yaml" --dry-run=client -o jsonpath='{.metadata.name}')
patch=$(jq -r --arg j "$JOB" 'select(.msg=="patched" and .name==$j and .kind=="Job") | .patch' \
    "$MKUEUE_E2E_DIR/logs/mkueue-webhook.log" | tail -n1)
[ -n "$patch" ] || fail "the webhook did not patch $JOB"
say "The webhook's JSON patch: $patch"
show kubectl --context manager get job -n ml-demo "$JOB" -o jsonpath='managedBy: {.spec.managedBy}{"\n"}'
say "So the manager's Job controller leaves it alone: the manager never runs the job itself."

step "6. The reconciler creates the Workload on the manager and reserves quota"
wl() { get manager workloads -n ml-demo -l "kueue.x-k8s.io/job-uid=$(get manager job "$JOB" -n ml-demo -o jsonpath='{.metadata.uid}')" -o jsonpath="$1"; }
has_wl() { [ -n "$(wl '{.items[0].metadata.name}')" ]; }
wait_for 30 "the manager Workload" has_wl
WL=$(wl '{.items[0].metadata.name}')
show kubectl --context manager get workload -n ml-demo "$WL"

step "7. Copies go to both workers; the first worker to admit wins, the other copy is deleted"
winner() { get manager workload -n ml-demo "$WL" -o jsonpath='{.status.clusterName}'; }
has_winner() { [ -n "$(winner)" ]; }
wait_for 60 "a worker to admit the Workload" has_winner
W=$(winner)
L=worker-1; [ "$W" = worker-1 ] && L=worker-2
show kubectl --context manager get workload -n ml-demo "$WL" -o jsonpath='{.status.admissionChecks[0].name}: {.status.admissionChecks[0].state} — {.status.admissionChecks[0].message}{"\n"}'
wait_for 30 "the job on $W" get "$W" job "$JOB" -n ml-demo
wait_for 30 "the copy on $L to be deleted" eval "! get $L workload $WL -n ml-demo"
show kubectl --context "$W" get job,workload -n ml-demo
good "$JOB runs on $W; $L has nothing left"

step "8. The job runs on $W (KWOK runs its pod for 10 s) and its status comes back"
has_pod() { [ -n "$(get "$W" pods -n ml-demo -l job-name="$JOB" -o name)" ]; }
wait_for 30 "the pod of $JOB on $W" has_pod
running() { [ "$(get manager job "$JOB" -n ml-demo -o jsonpath='{.status.active}')" = 1 ]; }
wait_for 30 "the manager Job to show the pod active" running
show kubectl --context "$W" get workloads,jobs,pods -n ml-demo
show kubectl --context manager get job,pods -n ml-demo
say "The manager shows the job active, with no pod of its own."
complete() { [ "$(get manager job "$JOB" -n ml-demo -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}')" = True ]; }
wait_for 60 "the manager Job to show Complete" complete
show kubectl --context manager get job -n ml-demo "$JOB"
good "the manager's Job is Complete, mirrored from $W"

step "9. The Workload finishes and the remote objects are cleaned up"
finished() { [ "$(get manager workload -n ml-demo "$WL" -o jsonpath='{.status.conditions[?(@.type=="Finished")].status}')" = True ]; }
wait_for 60 "the manager Workload to finish" finished
show kubectl --context manager get workload -n ml-demo "$WL"
wait_for 60 "the job on $W to be deleted" eval "! get $W job $JOB -n ml-demo"
wait_for 60 "the Workload on $W to be deleted" eval "! get $W workload $WL -n ml-demo"
show kubectl --context "$W" get job,workload -n ml-demo
good "nothing of $JOB is left on the workers"

step "Done"
say "Explore:  eval \"\$(e2e/testbed.sh env)\"; kubectl --context manager get workloads -A"
say "Metrics:  curl -s http://127.0.0.1:$WH_METRICS/metrics; curl -s http://127.0.0.1:$RC_METRICS/metrics"
say "Logs:     $MKUEUE_E2E_DIR/logs/"
say "Stop:     make e2e-down"
