# Helpers for the reconciler scenarios (30-reconciler-*.bats). Loaded after
# helpers.bash. The manager gets e2e/manifests/manager.yaml (ClusterQueue
# team-a-cq -> AdmissionCheck multikueue-ac -> MultiKueueConfig -> worker-1,
# worker-2 through Secrets in mkueue-system), the workers worker.yaml; each
# test works in its own namespace with a LocalQueue team-a everywhere.

RC_BIN="$BIN/mkueue-reconciler"
RC_METRICS_BASE=${RC_METRICS_BASE:-18300}

# rc_bed_setup: the queues and credentials every reconciler scenario uses
# (helpers.bash bed_queues); rc_secret CLUSTER KUBECONFIG-FILE rewrites one
# cluster's kubeconfig Secret.
rc_bed_setup() { bed_queues; }
rc_secret() { bed_secret "$@"; }

# rc_start NAME METRICS-PORT [FLAGS...]: runs a reconciler against the manager.
rc_start() {
    local name=$1 port=$2; shift 2
    start_component "$name" "$RC_BIN" --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/manager.yaml" \
        --metrics-addr "127.0.0.1:$port" "$@"
    eventually 30 curl -sf "http://127.0.0.1:$port/readyz" -o /dev/null
}

# rc_secret_dead CLUSTER: the cluster's Secret points at a closed port (the
# cluster stays in the config, but never connects).
rc_secret_dead() {
    sed "s#server: https://127.0.0.1:[0-9]*#server: https://127.0.0.1:1#" \
        "$MKUEUE_E2E_DIR/kubeconfig/$1.yaml" >"$BATS_TEST_TMPDIR/dead-$1.yaml"
    rc_secret "$1" "$BATS_TEST_TMPDIR/dead-$1.yaml"
}

# mkc_active CLUSTER: the MultiKueueCluster's Active status (True/False).
mkc_active() { jp manager mkc "$1" -o jsonpath='{.status.conditions[?(@.type=="Active")].status}'; }

# rc_ns NAME: a namespace with LocalQueue team-a on the manager and both
# workers (helpers.bash bed_ns); rc_ns_delete NAME removes it everywhere.
rc_ns() { bed_ns "$1"; }
rc_ns_delete() { bed_ns_delete "$1"; }

# rc_ns_pods NAME: rc_ns, opted in for the pod-based kinds' webhooks, with
# its default ServiceAccount (the ServiceAccount admission plugin needs it).
rc_ns_pods() {
    rc_ns "$1"
    km label ns "$1" kueue.x-k8s.io/managed-namespace=true >/dev/null
    eventually 20 km -n "$1" get sa default -o name >/dev/null
}

# rc_job NS NAME [CPU]: a Job for queue team-a (or RC_QUEUE; more labels in
# RC_LABELS, "key: value, ...") on the manager, as the webhook leaves it (managedBy MultiKueue, suspended). Its pod runs
# until the scenario ends it (rc_finish_pod), or as RC_RESULT says
# (Succeeded, Failed: KWOK ends it after RC_DURATION, default 1s). The manager's
# TTL controller deletes it RC_TTL seconds (default 5) after it finished.
rc_job() {
    km apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  namespace: $1
  name: $2
  labels: {kueue.x-k8s.io/queue-name: ${RC_QUEUE:-team-a}${RC_LABELS:+, $RC_LABELS}}
spec:
  managedBy: kueue.x-k8s.io/multikueue
  suspend: true
  ttlSecondsAfterFinished: ${RC_TTL:-5}
  parallelism: 1
  completions: 1
  template:
    metadata:
      annotations: {mkueue.test/result: ${RC_RESULT:-Running}, mkueue.test/duration: ${RC_DURATION:-1s}}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["true"]
        resources: {requests: {cpu: ${3:-100m}}}
YAML
}

# Objects carrying our origin label, on one worker / all workers.
rc_remote_jobs() { k "$1" -n "$2" get jobs -l kueue.x-k8s.io/multikueue-origin=multikueue -o name 2>/dev/null; }
rc_remote_wls() { k "$1" -n "$2" get workloads -l kueue.x-k8s.io/multikueue-origin=multikueue -o name 2>/dev/null; }
rc_count_remote_jobs() { { rc_remote_jobs worker-1 "$1"; rc_remote_jobs worker-2 "$1"; } | grep -c . || true; }
rc_count_remote_wls() { { rc_remote_wls worker-1 "$1"; rc_remote_wls worker-2 "$1"; } | grep -c . || true; }

# The manager Workload of a job: its name, and fields of it.
rc_wl_name() { km -n "$1" get workloads -o jsonpath="{.items[?(@.metadata.ownerReferences[0].name==\"$2\")].metadata.name}" 2>/dev/null; }
rc_wl() { local w; w=$(rc_wl_name "$1" "$2"); [ -n "$w" ] && km -n "$1" get workload "$w" -o jsonpath="$3" 2>/dev/null; }
rc_cluster_of() { rc_wl "$1" "$2" '{.status.clusterName}'; }
rc_check_state() { rc_wl "$1" "$2" '{.status.admissionChecks[0].state}'; }
rc_cond() { rc_wl "$1" "$2" "{.status.conditions[?(@.type==\"$3\")].status}"; }

is_ready() { is_eq Ready rc_check_state "$1" "$2"; }
has_cluster() { [ -n "$(rc_cluster_of "$1" "$2")" ]; }
no_remote_objects() { [ "$(rc_count_remote_jobs "$1")" = 0 ] && [ "$(rc_count_remote_wls "$1")" = 0 ]; }

# rc_finish_pod CLUSTER NS JOB [PHASE]: the job's pod on that worker ends:
# its KWOK result annotation changes and KWOK moves it to PHASE.
rc_finish_pod() {
    local pod
    eventually 20 has_pods "$1" "$2" "job-name=$3"
    pod=$(k "$1" -n "$2" get pods -l "job-name=$3" -o name | head -1)
    k "$1" -n "$2" annotate --overwrite "$pod" "mkueue.test/result=${4:-Succeeded}" \
        mkueue.test/duration=0s >/dev/null
}

# rc_metric PORT NAME-AND-LABELS: the value of one series (empty when absent).
rc_metric() {
    curl -sf "http://127.0.0.1:$1/metrics" | awk -v s="$2" 'index($0, s" ") == 1 { print $NF }'
}

# pid of a test-bed process (e.g. apiserver-worker-2)
bed_pid() { awk -v n="$1" '$2 == n { print $1 }' "$MKUEUE_E2E_DIR/pids"; }

# none_on_manager_nodes: no pod of namespace $NS is bound to a manager node
# (dispatched pods run on workers only).
none_on_manager_nodes() { eq "" "$(km -n "$NS" get pods -o jsonpath='{.items[*].spec.nodeName}')"; }

# rc_proxy NAME CLUSTER PORT [ARGS...]: e2e/scripts/lease-proxy.py (more
# ARGS: --hold, --empty) in front of CLUSTER's API server on PORT, started as
# component NAME. Its request log is $PROXY_LOG, a kubeconfig for CLUSTER
# through it $PROXY_KC (both under $MKUEUE_E2E_DIR, named after NAME).
rc_proxy() {
    local name=$1 c=$2 port=$3; shift 3
    local kc=$MKUEUE_E2E_DIR/kubeconfig/$c.yaml pki=$MKUEUE_E2E_DIR/pki/$c up
    up=$(sed -n 's|^ *server: https://||p' "$kc" | head -1)
    export PROXY_LOG=$MKUEUE_E2E_DIR/logs/$name.requests
    export PROXY_KC=$MKUEUE_E2E_DIR/kubeconfig/$c-via-$name.yaml
    : >"$PROXY_LOG"
    install -m 600 /dev/null "$PROXY_KC"
    sed "s|server: https://$up|server: https://127.0.0.1:$port|" "$kc" >"$PROXY_KC"
    start_component "$name" python3 "$MKUEUE_ROOT/e2e/scripts/lease-proxy.py" --listen "$port" \
        --upstream "$up" --cert "$pki/apiserver.crt" --key "$pki/apiserver.key" --ca "$pki/ca.crt" \
        --client-cert "$pki/admin.crt" --client-key "$pki/admin.key" --log "$PROXY_LOG" "$@"
    eventually 10 k "$c" --server "https://127.0.0.1:$port" get --raw /readyz
}

# rc_orphan_wl CONTEXT NS: a Workload rc-orphan with our origin on a worker,
# whose manager Workload does not exist (the GC's to delete).
rc_orphan_wl() {
    k "$1" apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: $2
  name: rc-orphan
  labels: {kueue.x-k8s.io/multikueue-origin: multikueue}
spec:
  queueName: team-a
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: 10m}}}]}}
YAML
}
