# Shared helpers for the bats scenarios. Loaded with `load helpers`.
# The runner exports KUBECONFIG (contexts manager, worker-1, worker-2),
# MKUEUE_E2E_DIR, MKUEUE_ROOT, MKUEUE_BED (the built parts) and HELM, and
# puts the bed's kubectl first on PATH.

CLUSTERS=(manager worker-1 worker-2)
# Our binaries: bin/ by default, or e.g. the ASan+UBSan build (make e2e-asan).
BIN=${MKUEUE_BIN:-$MKUEUE_ROOT/bin}

k() { kubectl --context "$1" "${@:2}"; }
km() { k manager "$@"; }
kw1() { k worker-1 "$@"; }
kw2() { k worker-2 "$@"; }

# A fresh namespace name per test: deletion is asynchronous, so a name is
# never reused within a run.
fresh_ns() { echo "$1-$BATS_TEST_NUMBER-$RANDOM"; }

# eventually SECONDS CMD...: retries CMD every 0.2 s until it succeeds.
eventually() {
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do
        [ $SECONDS -lt $deadline ] || { echo "timed out waiting for: $*" >&2; return 1; }
        sleep 0.2
    done
}

# has_pods CONTEXT NAMESPACE SELECTOR: some pod matches (for `eventually`).
has_pods() { [ -n "$(k "$1" -n "$2" get pods -l "$3" -o name 2>/dev/null)" ]; }

# jsonpath CONTEXT ARGS... -> value printed by kubectl -o jsonpath
jp() { k "$1" get "${@:2}" 2>/dev/null; }

# On failure, show the objects and the tail of each component's log.
dump_state() {
    local c
    for c in "${CLUSTERS[@]}"; do
        echo "# ---- $c"
        k "$c" get workloads,localqueues,clusterqueues,jobs,pods -A -o wide 2>&1 | grep -v kube-system | sed 's/^/# /'
    done
    for f in "$MKUEUE_E2E_DIR"/logs/*.log; do
        case "$f" in *apiserver*|*etcd*|*kcm*|*scheduler*|*kwok*|*jobset-*|*lws-*) continue ;; esac
        echo "# ---- $(basename "$f")"
        grep -v '"informer"' "$f" | tail -n 30 | cut -c1-600 | sed 's/^/# /'
    done
}

teardown_common() {
    if [ -z "${BATS_TEST_COMPLETED:-}" ]; then dump_state >&3; fi
}

# start_component NAME CMD... : runs a binary of ours in the background for a
# scenario (logs in $MKUEUE_E2E_DIR/logs/NAME.log, shown on failure). Call
# stop_component NAME (or stop_all_components) in teardown/teardown_file.
start_component() {
    local name=$1; shift
    mkdir -p "$MKUEUE_E2E_DIR/logs" "$MKUEUE_E2E_DIR/run"
    setsid "$@" >>"$MKUEUE_E2E_DIR/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$MKUEUE_E2E_DIR/run/$name.pid"
}

# stop_component NAME [SIGNAL]: SIGTERM by default, SIGKILL after 10 s.
stop_component() {
    local f="$MKUEUE_E2E_DIR/run/$1.pid" pid i
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    kill -"${2:-TERM}" -- "-$pid" 2>/dev/null || true
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$f"
}

stop_all_components() {
    local f
    for f in "$MKUEUE_E2E_DIR"/run/*.pid; do
        [ -e "$f" ] && stop_component "$(basename "$f" .pid)"
    done
    return 0
}

# count_of CONTEXT RESOURCE ARGS...: how many objects kubectl lists.
count_of() { k "$1" get "${@:2}" -o name 2>/dev/null | grep -c . || true; }

# eq WANT GOT: like [ = ] but shows both values on failure.
eq() { [ "$1" = "$2" ] || { echo "want '$1', got '$2'" >&2; return 1; }; }

# is_eq WANT CMD...: CMD prints WANT (for `eventually`).
is_eq() { [ "$("${@:2}")" = "$1" ]; }

# ---- the bed's queues, and mkueue-webhook on it (20, 393, 45) ----------------

# bed_queues: the queues and credentials of the default bed: the manager gets
# e2e/manifests/manager.yaml (ClusterQueue team-a-cq -> AdmissionCheck
# multikueue-ac -> MultiKueueConfig -> worker-1, worker-2 through Secrets in
# mkueue-system), the workers worker.yaml.
bed_queues() {
    kw1 apply -f "$MKUEUE_ROOT/e2e/manifests/worker.yaml" >/dev/null
    kw2 apply -f "$MKUEUE_ROOT/e2e/manifests/worker.yaml" >/dev/null
    km apply -f "$MKUEUE_ROOT/e2e/manifests/manager.yaml" >/dev/null
    local i
    for i in 1 2; do bed_secret worker-$i "$MKUEUE_E2E_DIR/kubeconfig/worker-$i.yaml"; done
}

# bed_secret CLUSTER KUBECONFIG-FILE: (re)writes the cluster's kubeconfig Secret.
bed_secret() {
    km -n mkueue-system create secret generic "$1-kubeconfig" --from-file=kubeconfig="$2" \
        --dry-run=client -o yaml | km apply -f - >/dev/null
}

# bed_ns NAME: a namespace with LocalQueue team-a (-> team-a-cq) on the
# manager and both workers; bed_ns_delete NAME removes it everywhere.
bed_ns() {
    local c
    for c in manager worker-1 worker-2; do
        k "$c" create ns "$1" >/dev/null
        k "$c" apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $1, name: team-a}
spec: {clusterQueue: team-a-cq}
YAML
    done
}

bed_ns_delete() {
    local c
    for c in manager worker-1 worker-2; do k "$c" delete ns "$1" --wait=false >/dev/null 2>&1 || true; done
}

WH_PORT=${MKUEUE_WEBHOOK_PORT:-16446}
WH_MPORT=${MKUEUE_WEBHOOK_METRICS_PORT:-16447}
# the namespaces the chart's webhooks leave out, by name (invariant 15)
WH_NS_SELECTOR='{matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, mkueue-system]}]}'

# wh_start NAME CERTS [FLAGS...]: a certificate from certs/gen.sh into the
# folder CERTS, and mkueue-webhook (with FLAGS) as component NAME on WH_PORT
# (metrics WH_MPORT) against the manager, once ready and synced with both
# workers. Call bed_queues first.
wh_start() {
    local name=$1 d=$2 w
    shift 2
    "$MKUEUE_ROOT/certs/gen.sh" webhook "$d" >/dev/null
    # the label WH_NS_SELECTOR matches (set by Kubernetes itself; kept explicit)
    km label ns kube-system kubernetes.io/metadata.name=kube-system --overwrite >/dev/null
    km label ns mkueue-system kubernetes.io/metadata.name=mkueue-system --overwrite >/dev/null
    start_component "$name" "$BIN/mkueue-webhook" \
        --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/manager.yaml" --namespace mkueue-system \
        --cert-dir "$d" --bind-address 127.0.0.1 --port "$WH_PORT" \
        --metrics-bind-address 127.0.0.1 --metrics-port "$WH_MPORT" "$@"
    eventually 30 curl -sf "http://127.0.0.1:$WH_MPORT/readyz" -o /dev/null
    for w in worker-1 worker-2; do
        eventually 30 bash -c "curl -sf http://127.0.0.1:$WH_MPORT/metrics |
            grep -qx 'mkueue_webhook_cache_synced{cluster=\"$w\"} 1'"
    done
}

# register_webhooks KIND NAME CERTS NS-SELECTOR OBJECT-SELECTOR HOOK...: a KIND
# (Mutating or Validating) WebhookConfiguration NAME calling the webhook on
# WH_PORT (trusting the CA in CERTS), as the chart registers one. Each HOOK is
# "GROUP VERSION RESOURCE KIND OPERATIONS" (GROUP core for "", OPERATIONS
# comma-separated): webhook <verb>-<kind>.mkueue.x-k8s.io at the webhook's
# per-kind path /<verb>-<group, dots as dashes>-<version>-<kind>. The
# selectors are flow YAML, "" for none.
register_webhooks() {
    local kind=$1 name=$2 ca verb=mutate h group version resource k ops
    ca=$(base64 -w0 <"$3/ca.crt")
    [ "$kind" = Validating ] && verb=validate
    local nssel=$4 objsel=$5
    shift 5
    {
        echo "apiVersion: admissionregistration.k8s.io/v1"
        echo "kind: ${kind}WebhookConfiguration"
        echo "metadata: {name: $name}"
        echo "webhooks:"
        for h in "$@"; do
            read -r group version resource k ops <<<"$h"
            [ "$group" = core ] && group=
            cat <<YAML
- name: $verb-$k.mkueue.x-k8s.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 10
  clientConfig:
    url: https://127.0.0.1:$WH_PORT/$verb-${group//./-}-$version-$k
    caBundle: $ca
  rules:
  - apiGroups: ["$group"]
    apiVersions: ["$version"]
    resources: ["$resource"]
    operations: [${ops//,/, }]
YAML
            [ -z "$nssel" ] || echo "  namespaceSelector: $nssel"
            [ -z "$objsel" ] || echo "  objectSelector: $objsel"
        done
    } | km apply -f - >/dev/null
}

# mkueue ARGS...: the kubectl plugin of this tree (plugin/kubectl-mkueue),
# as `kubectl mkueue ARGS` against the manager.
mkueue() { PATH="$MKUEUE_ROOT/plugin:$PATH" kubectl mkueue "$@" --context manager; }
