#!/usr/bin/env bash
# Three current Kubernetes control planes on loopback: `manager`, `worker-1`,
# `worker-2`, built from Go modules by scripts/build-testbed.sh. One etcd (a
# prefix per cluster); per cluster a kube-apiserver, kube-controller-manager
# (the Job controller on everywhere: managedBy keeps the manager from running
# dispatched jobs), kube-scheduler, and KWOK with fake nodes (CPU, memory,
# nvidia.com/gpu) that run pods through the stages in kwok/stages.yaml. On
# each worker, real Kueue and the JobSet and LeaderWorkerSet controllers run
# out of cluster, their webhooks registered by URL on loopback. TLS
# everywhere, client-cert admin, RBAC, service-account keys.
#
#   e2e/testbed.sh up      start (idempotent: an already running bed is kept)
#   e2e/testbed.sh down    stop every process and free the ports
#   e2e/testbed.sh status  show what runs
#   e2e/testbed.sh env     print the variables to source (KUBECONFIG, PATH ...)
#   e2e/testbed.sh up-cluster manager-kueue    the optional 4th cluster (below)
#   e2e/testbed.sh down-cluster manager-kueue  stop it alone (`down` stops it too)
#
# manager-kueue, started on demand by the scenarios of mkueue's with-kueue
# mode: a manager with its own control plane (the same etcd, its own prefix),
# Kueue's real CRDs and real Kueue with the batch Job integration and its
# MultiKueue controller off (feature gate MultiKueue=false), dispatching to
# the same worker-1/worker-2. Its processes are listed in $DIR/pids-manager-kueue,
# apart from the default bed's. MKUEUE_MANAGER_KUEUE_MULTIKUEUE=1 at up-cluster
# keeps Kueue's MultiKueue controller on instead (Kueue as the whole manager).
#
# Settings (environment): MKUEUE_E2E_DIR (state, default /tmp/mkueue-e2e),
# MKUEUE_ETCD_PORT (23790), MKUEUE_MANAGER_PORT (16443), MKUEUE_WORKER1_PORT
# (16444), MKUEUE_WORKER2_PORT (16445), MKUEUE_MANAGER_KUEUE_PORT (manager + 5),
# MKUEUE_PORT_BASE (19400: the controllers' webhook and health ports),
# MKUEUE_CACHE (build cache).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
DIR=${MKUEUE_E2E_DIR:-/tmp/mkueue-e2e}
ETCD_PORT=${MKUEUE_ETCD_PORT:-23790}
declare -A PORT=([manager]=${MKUEUE_MANAGER_PORT:-16443}
                 [worker-1]=${MKUEUE_WORKER1_PORT:-16444}
                 [worker-2]=${MKUEUE_WORKER2_PORT:-16445})
PORT[manager-kueue]=${MKUEUE_MANAGER_KUEUE_PORT:-$((PORT[manager] + 5))}
CLUSTERS=(manager worker-1 worker-2)
WORKERS=(worker-1 worker-2)
PORT_BASE=${MKUEUE_PORT_BASE:-19400}
PIDS="$DIR/pids"
MK_PIDS="$DIR/pids-manager-kueue" # the optional manager-kueue's processes
log() { echo "testbed: $*" >&2; }

BED=$("$HERE/scripts/build-testbed.sh")
PATH="$BED/bin:$PATH"

# ctl_port CONTROLLER CLUSTER PURPOSE: fixed ports per controller and cluster:
# kueue 19411.., jobset 19421.., lws 19431.. (manager-kueue's Kueue 19410);
# health is webhook + 5.
ctl_port() {
    local c n=${2#worker-} off=0
    [ "$2" = manager-kueue ] && n=0
    case $1 in kueue) c=1 ;; jobset) c=2 ;; lws) c=3 ;; esac
    [ "$3" = health ] && off=5
    echo $((PORT_BASE + c * 10 + n + off))
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start NAME CMD... : runs CMD in its own session, logs to $DIR/logs/NAME.log,
# its pid listed in $START_PIDS (the default bed's list unless set)
start() {
    local name=$1; shift
    setsid "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
    echo "$! $name" >>"${START_PIDS:-$PIDS}"
}

# Our own binaries started beside the bed (demo, scenarios): $DIR/run/*.pid
stop_components() {
    local f
    for f in "$DIR"/run/*.pid; do
        [ -e "$f" ] || continue
        kill -TERM -- "-$(cat "$f")" 2>/dev/null || true
        sleep 0.2
        kill -KILL -- "-$(cat "$f")" 2>/dev/null || true
        rm -f "$f"
    done
}

# stop_list FILE: stops the processes listed in FILE, then removes it
stop_list() {
    [ -f "$1" ] || return 0
    local pid name
    # reverse order: controllers, apiservers, then etcd
    tac "$1" | while read -r pid name; do
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    done
    for _ in $(seq 50); do
        local alive=0
        while read -r pid name; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$1"
        [ $alive = 0 ] && break
        sleep 0.1
    done
    while read -r pid name; do kill -KILL -- "-$pid" 2>/dev/null || true; done <"$1"
    rm -f "$1"
}

stop_all() {
    stop_components
    stop_list "$MK_PIDS" # needs the bed's etcd: stopped first
    stop_list "$PIDS"
}

# running [FILE]: every process of the default bed (and of FILE) is alive
running() {
    [ -f "$PIDS" ] || return 1
    local pid name f
    for f in "$PIDS" "$@"; do
        [ -f "$f" ] || return 1
        while read -r pid name; do kill -0 "$pid" 2>/dev/null || return 1; done <"$f"
    done
}

pki() {
    local c=$1 d="$DIR/pki/$1"
    "$ROOT/certs/gen.sh" ca "$d" ca "$c-ca"
    "$ROOT/certs/gen.sh" serving "$d" apiserver ca kube-apiserver \
        "127.0.0.1,localhost,kubernetes,kubernetes.default,kubernetes.default.svc"
    "$ROOT/certs/gen.sh" client "$d" admin ca "$c-admin" system:masters
    "$ROOT/certs/gen.sh" client "$d" kcm ca system:kube-controller-manager
    "$ROOT/certs/gen.sh" client "$d" scheduler ca system:kube-scheduler
    "$ROOT/certs/gen.sh" sa "$d" sa
    # the controllers' webhook servers on loopback
    "$ROOT/certs/gen.sh" serving "$d" webhook ca "$c-webhooks" "127.0.0.1,localhost"
    mkdir -p "$d/webhook-dir"
    cp "$d/webhook.crt" "$d/webhook-dir/tls.crt"
    cp "$d/webhook.key" "$d/webhook-dir/tls.key"
}

b64() { base64 -w0 <"$1"; }

# kubeconfig FILE CLUSTER USER-CERT-BASENAME (private: it holds a key)
kubeconfig() {
    local c=$2 d="$DIR/pki/$2"
    install -m 600 /dev/null "$1"
    cat >"$1" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: $c
  cluster:
    server: https://127.0.0.1:${PORT[$c]}
    certificate-authority-data: $(b64 "$d/ca.crt")
users:
- name: $c-$3
  user:
    client-certificate-data: $(b64 "$d/$3.crt")
    client-key-data: $(b64 "$d/$3.key")
contexts:
- name: $c
  context:
    cluster: $c
    user: $c-$3
current-context: $c
YAML
}

# wait_for WHAT SECONDS CMD...: retries CMD until it succeeds; fails when a
# bed process died or the time is up.
wait_for() {
    local what=$1 n=$(($2 * 5)) i; shift 2
    for i in $(seq "$n"); do
        "$@" >/dev/null 2>&1 && return 0
        if ! running ${START_PIDS:+"$START_PIDS"}; then
            log "a process died while waiting for $what; see $DIR/logs"
            local pid name
            cat "$PIDS" ${START_PIDS:+"$START_PIDS"} | while read -r pid name; do
                kill -0 "$pid" 2>/dev/null || { log "$name died:"; tail -n 20 "$DIR/logs/$name.log" >&2; }
            done
            return 1
        fi
        sleep 0.2
    done
    log "$what not ready in $2 s; see $DIR/logs"
    return 1
}

kc() { kubectl --kubeconfig "$DIR/kubeconfig/$1.yaml" "${@:2}"; }

# CRDs: the manager gets the chart's (mkueue's own Kueue API), the workers
# and manager-kueue Kueue's real ones; every cluster gets the job kinds' real CRDs.
install_crds() {
    local c=$1 crds=$BED/manifests/kueue/crds/
    [ "$c" = manager ] && crds=$ROOT/charts/mkueue/crds/
    # retried: a loaded API server times out on the large CRDs now and then
    wait_for "CRDs applied on $c" 300 kc "$c" apply --server-side -f "$crds" -f "$BED/manifests/jobs/"
    # one long wait: `kubectl wait --all` waits object by object within one
    # timeout, which a short timeout never meets on a loaded machine
    wait_for "CRDs of $c" 180 kc "$c" wait --for=condition=Established --timeout=120s crd --all
    # the Kubeflow trainer's runtime that TrainJobs refer to
    wait_for "runtimes on $c" 60 kc "$c" apply --server-side -f "$BED/manifests/runtimes/"
}

# webhooks FILE CLUSTER PORT PREFIX: a controller's own webhook
# configurations, its in-cluster service reference rewritten to a URL on
# loopback with the bed's CA, names prefixed as its release manifests do.
webhooks() {
    local ca
    ca=$(b64 "$DIR/pki/$2/ca.crt")
    awk -v url="https://127.0.0.1:$3" -v ca="$ca" -v prefix="$4" '
        /^metadata:/ { meta = 1; print; next }
        meta && /^  name: / { print "  name: " prefix "-" $2; meta = 0; next }
        /^[^ ]/ { meta = 0 }
        /^ +service:$/ { svc = 1; ind = substr($0, 1, index($0, "s") - 1); next }
        svc && /^ +path: / { print ind "url: " url $2; print ind "caBundle: " ca; svc = 0; next }
        svc && /^ +(name|namespace|port): / { next }
        { svc = 0; print }' "$1" | kc "$2" apply -f - >/dev/null
}

# nodes CLUSTER COUNT: fake nodes KWOK manages (8 CPU, 32Gi, 4 GPUs each).
nodes() {
    local i
    for i in $(seq "$2"); do
        kc "$1" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $1-node-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, kubernetes.io/hostname: $1-node-$i, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
status:
  allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4", pods: "110"}
  capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4", pods: "110"}
YAML
    done
    # the apiserver taints a new node not-ready; the node lifecycle controller,
    # off here (no kubelet heartbeats), would be the one to lift it
    kc "$1" taint nodes -l type=kwok node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}

# Real Kueue on a worker: every integration, leader election off, its
# webhooks served on loopback with the bed's certificate. On manager-kueue:
# the batch Job integration only, MultiKueue off (mkueue's with-kueue mode).
start_kueue() {
    local c=$1 conf="$DIR/conf/kueue-$1.yaml" gates=VisibilityOnDemand=false
    local frameworks="[batch/job, jobset.x-k8s.io/jobset, kubeflow.org/mpijob, ray.io/rayjob,
    ray.io/raycluster, ray.io/rayservice, kubeflow.org/paddlejob, kubeflow.org/pytorchjob,
    kubeflow.org/tfjob, kubeflow.org/xgboostjob, kubeflow.org/jaxjob,
    workload.codeflare.dev/appwrapper, trainer.kubeflow.org/trainjob, pod, deployment,
    statefulset, leaderworkerset.x-k8s.io/leaderworkerset]"
    local extra=""
    if [ "$c" = manager-kueue ]; then
        # MultiKueue (beta, on by default) gates Kueue's MultiKueue
        # controllers and indexers; the core, the scheduler and the Job
        # integration keep running, and mkueue is the check's controller.
        # MKUEUE_MANAGER_KUEUE_MULTIKUEUE=1 leaves it on: Kueue's own
        # MultiKueue manager (the bench's mode kueue). Client rate and
        # concurrency as in Kueue's release configuration.
        frameworks="[batch/job]"
        [ "${MKUEUE_MANAGER_KUEUE_MULTIKUEUE:-0}" = 1 ] || gates+=,MultiKueue=false
        extra="clientConnection: {qps: 50, burst: 100}
controller: {groupKindConcurrency: {Job.batch: 5, Workload.kueue.x-k8s.io: 5}}
multiKueue: {gcInterval: 1m, origin: multikueue, workerLostTimeout: 15m}"
    fi
    kc "$c" create namespace kueue-system >/dev/null 2>&1 || true
    cat >"$conf" <<YAML
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health: {healthProbeBindAddress: "127.0.0.1:$(ctl_port kueue "$c" health)"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $(ctl_port kueue "$c" webhook), certDir: "$DIR/pki/$c/webhook-dir"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
integrations:
  frameworks: $frameworks
$extra
YAML
    webhooks "$BED/manifests/kueue/webhook.yaml" "$c" "$(ctl_port kueue "$c" webhook)" kueue
    # Kueue reads its metrics certificate from this fixed path when it does
    # not manage certificates itself (metrics are off here, the file must exist)
    mkdir -p /etc/kueue/metrics/certs
    cp "$DIR/pki/$c/webhook-dir/tls.crt" "$DIR/pki/$c/webhook-dir/tls.key" /etc/kueue/metrics/certs/
    KUBECONFIG="$DIR/kubeconfig/$c.yaml" start "kueue-$c" "$BED/bin/kueue" --config "$conf" \
        --feature-gates "$gates"
}

# The JobSet and LeaderWorkerSet controllers on a worker, the same way.
start_jobset_lws() {
    local c=$1 name
    for name in jobset lws; do
        kc "$c" create namespace "$name-system" >/dev/null 2>&1 || true
        cat >"$DIR/conf/$name-$c.yaml" <<YAML
apiVersion: config.$name.x-k8s.io/v1alpha1
kind: Configuration
health: {healthProbeBindAddress: "127.0.0.1:$(ctl_port $name "$c" health)"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $(ctl_port $name "$c" webhook), certDir: "$DIR/pki/$c/webhook-dir"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
YAML
        webhooks "$BED/manifests/$name/webhook.yaml" "$c" "$(ctl_port $name "$c" webhook)" "$name"
        POD_NAMESPACE=$name-system KUBECONFIG="$DIR/kubeconfig/$c.yaml" start "$name-$c" \
            "$BED/bin/$name" --config "$DIR/conf/$name-$c.yaml"
    done
}

healthy() { curl -sf "http://127.0.0.1:$1/readyz"; }

# start_apiserver CLUSTER ETCD-PREFIX: the cluster's kubeconfigs and API server.
start_apiserver() {
    local c=$1 d="$DIR/pki/$1"
    kubeconfig "$DIR/kubeconfig/$c.yaml" "$c" admin
    kubeconfig "$DIR/kubeconfig/$c-kcm.yaml" "$c" kcm
    kubeconfig "$DIR/kubeconfig/$c-scheduler.yaml" "$c" scheduler
    start "apiserver-$c" kube-apiserver \
        --etcd-servers "http://127.0.0.1:$ETCD_PORT" --etcd-prefix "$2" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --endpoint-reconciler-type none \
        --secure-port "${PORT[$c]}" \
        --tls-cert-file "$d/apiserver.crt" --tls-private-key-file "$d/apiserver.key" \
        --client-ca-file "$d/ca.crt" \
        --service-account-key-file "$d/sa.pub" \
        --service-account-signing-key-file "$d/sa.key" \
        --service-account-issuer "https://kubernetes.default.svc" \
        --api-audiences "https://kubernetes.default.svc" \
        --authorization-mode Node,RBAC --service-cluster-ip-range 10.96.0.0/16 \
        --profiling=false --event-ttl 10m
}

# start_plane CLUSTER: once its API server answers, the controller-manager,
# scheduler and KWOK, the CRDs and two fake nodes.
start_plane() {
    local c=$1 d="$DIR/pki/$1"
    # no cloud, no volumes, no node lifecycle (KWOK keeps the fake nodes Ready)
    local ctl='*,-node-ipam-controller,-node-lifecycle-controller,-persistentvolume-attach-detach-controller,-persistentvolume-binder-controller,-persistentvolume-expander-controller,-certificatesigningrequest-signing-controller'
    wait_for "apiserver $c" 60 kc "$c" get --raw /readyz
    start "kcm-$c" kube-controller-manager \
        --kubeconfig "$DIR/kubeconfig/$c-kcm.yaml" \
        --service-account-private-key-file "$d/sa.key" --root-ca-file "$d/ca.crt" \
        --use-service-account-credentials=true \
        --leader-elect=false --secure-port 0 --controllers "$ctl"
    start "scheduler-$c" kube-scheduler --kubeconfig "$DIR/kubeconfig/$c-scheduler.yaml" \
        --leader-elect=false --secure-port 0
    start "kwok-$c" kwok --kubeconfig "$DIR/kubeconfig/$c.yaml" \
        --config "$HERE/kwok/stages.yaml" --manage-all-nodes=false \
        --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
        --server-address "" --node-ip 10.244.0.1 --cidr 10.244.0.0/16
    install_crds "$c"
    nodes "$c" 2
}


up() {
    if running; then
        log "already running (state in $DIR)"
        return 0
    fi
    stop_all
    local p c
    for p in "$ETCD_PORT" $((ETCD_PORT + 1)) "${PORT[@]}"; do
        port_busy "$p" && { log "port $p is in use; set MKUEUE_*_PORT"; return 1; }
    done
    mkdir -p "$DIR/logs" "$DIR/kubeconfig" "$DIR/conf"
    rm -rf "$DIR/etcd"
    for c in "${CLUSTERS[@]}"; do pki "$c"; done

    start etcd etcd --name mkueue-e2e --data-dir "$DIR/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-cluster "mkueue-e2e=http://127.0.0.1:$((ETCD_PORT + 1))" \
        --quota-backend-bytes 4294967296 --unsafe-no-fsync --log-level warn

    for c in "${CLUSTERS[@]}"; do start_apiserver "$c" "/$c"; done
    for c in "${CLUSTERS[@]}"; do start_plane "$c"; done
    for c in "${WORKERS[@]}"; do
        start_kueue "$c"
        start_jobset_lws "$c"
    done
    for c in "${WORKERS[@]}"; do
        wait_for "kueue on $c" 120 healthy "$(ctl_port kueue "$c" health)"
        wait_for "jobset on $c" 60 healthy "$(ctl_port jobset "$c" health)"
        wait_for "lws on $c" 60 healthy "$(ctl_port lws "$c" health)"
    done
    for c in "${CLUSTERS[@]}"; do
        wait_for "nodes of $c" 60 kc "$c" wait --for=condition=Ready node --all --timeout=30s
    done
    merged
    log "up: manager :${PORT[manager]}, worker-1 :${PORT[worker-1]}, worker-2 :${PORT[worker-2]}; KUBECONFIG=$DIR/kubeconfig/all.yaml"
}

# up_cluster manager-kueue: the optional 4th cluster beside a running bed
# (idempotent). A fresh etcd prefix each time, so it always starts empty.
up_cluster() {
    [ "${1:-}" = manager-kueue ] || { log "up-cluster: only manager-kueue"; return 2; }
    local c=manager-kueue
    running || { log "up-cluster: the bed is not running (testbed.sh up)"; return 1; }
    if running "$MK_PIDS" && healthy "$(ctl_port kueue "$c" health)" >/dev/null 2>&1; then
        log "$c already running"
        return 0
    fi
    stop_list "$MK_PIDS"
    local p
    for p in "${PORT[$c]}" "$(ctl_port kueue "$c" webhook)" "$(ctl_port kueue "$c" health)"; do
        port_busy "$p" && { log "port $p is in use; set MKUEUE_MANAGER_KUEUE_PORT or MKUEUE_PORT_BASE"; return 1; }
    done
    pki "$c"
    START_PIDS=$MK_PIDS
    : >"$MK_PIDS"
    start_apiserver "$c" "/$c-$(date +%s%N)"
    start_plane "$c"
    start_kueue "$c"
    wait_for "kueue on $c" 120 healthy "$(ctl_port kueue "$c" health)"
    wait_for "nodes of $c" 60 kc "$c" wait --for=condition=Ready node --all --timeout=30s
    merged
    log "up: $c :${PORT[$c]} (context $c)"
}

merged() {
    local files="" c
    for c in "${CLUSTERS[@]}"; do files+="$DIR/kubeconfig/$c.yaml:"; done
    [ -f "$MK_PIDS" ] && files+="$DIR/kubeconfig/manager-kueue.yaml:"
    install -m 600 /dev/null "$DIR/kubeconfig/all.yaml"
    KUBECONFIG=${files%:} kubectl config view --flatten >"$DIR/kubeconfig/all.yaml"
    kubectl --kubeconfig "$DIR/kubeconfig/all.yaml" config use-context manager >/dev/null
}

status() {
    if running; then log "running (state in $DIR)"; else log "not running"; fi
    [ -f "$PIDS" ] && cat "$PIDS"
    [ -f "$MK_PIDS" ] && cat "$MK_PIDS"
    cat "$BED/versions"
    return 0
}

case "${1:-}" in
up) up ;;
down) stop_all; log "down" ;;
up-cluster) up_cluster "${2:-}" ;;
down-cluster)
    [ "${2:-}" = manager-kueue ] || { log "down-cluster: only manager-kueue"; exit 2; }
    stop_list "$MK_PIDS"
    [ -f "$PIDS" ] && merged
    log "manager-kueue down" ;;
status) status ;;
env)
    echo "export KUBECONFIG=$DIR/kubeconfig/all.yaml"
    echo "export MKUEUE_E2E_DIR=$DIR"
    echo "export MKUEUE_BED=$BED"
    echo "export PATH=$BED/bin:\$PATH"
    echo "export HELM=$BED/bin/helm"
    for c in "${CLUSTERS[@]}" manager-kueue; do echo "export MKUEUE_PORT_${c//-/_}=${PORT[$c]}"; done ;;
*) echo "usage: $0 up|down|status|env|up-cluster manager-kueue|down-cluster manager-kueue" >&2; exit 2 ;;
esac
