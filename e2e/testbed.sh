#!/usr/bin/env bash
# Current Kubernetes control planes on loopback: `manager` and `worker-1` ..
# `worker-N` (N = MKUEUE_WORKERS, default 2, at most 8), built from Go modules
# by scripts/build-testbed.sh. One etcd (a prefix per cluster); per cluster a
# kube-apiserver, kube-controller-manager (the Job controller on everywhere:
# managedBy keeps the manager from running dispatched jobs), kube-scheduler,
# and KWOK with fake nodes (CPU, memory, nvidia.com/gpu) that run pods
# through the stages in kwok/stages.yaml. On each worker, real Kueue and the
# JobSet and LeaderWorkerSet controllers run out of cluster, their webhooks
# registered by URL on loopback. TLS everywhere, client-cert admin, RBAC,
# service-account keys.
#
#   e2e/testbed.sh up      start (idempotent: an already running bed is kept)
#   e2e/testbed.sh down    stop every process and free the ports, whatever
#                          the bed's size (the workers are in $DIR/workers)
#   e2e/testbed.sh status  show what runs
#   e2e/testbed.sh env     print the variables to source (KUBECONFIG, PATH ...)
#   e2e/testbed.sh ports   every port a bed of 8 workers and manager-kueue takes
#   e2e/testbed.sh up-cluster manager-kueue    the optional extra manager (below)
#   e2e/testbed.sh up-cluster worker-N         a worker added to a running bed
#   e2e/testbed.sh down-cluster CLUSTER        stop one of those alone (`down`
#                                              stops them too)
#
# manager-kueue, started on demand by the scenarios of mkueue's with-kueue
# mode: a manager with its own control plane (the same etcd, its own prefix),
# Kueue's real CRDs and real Kueue with the batch Job integration and its
# MultiKueue controller off (feature gate MultiKueue=false), dispatching to
# the same workers. Its processes are listed in $DIR/pids-manager-kueue, a
# worker added by up-cluster in $DIR/pids-worker-N, apart from the bed's.
# MKUEUE_MANAGER_KUEUE_MULTIKUEUE=1 at up-cluster keeps Kueue's MultiKueue
# controller on instead (Kueue as the whole manager: the bench's mode kueue).
#
# Settings (environment): MKUEUE_E2E_DIR (state, default /tmp/mkueue-e2e),
# MKUEUE_WORKERS (2), MKUEUE_WORKER_EXTRAS (1; 0: workers 3..N lean, Kueue
# for batch Jobs only), MKUEUE_ETCD_PORT (23790), MKUEUE_MANAGER_PORT (16443),
# MKUEUE_WORKER1_PORT (16444), MKUEUE_WORKER2_PORT (16445),
# MKUEUE_APISERVER_PROFILING (false; true serves the API servers' Go
# profiles at /debug/pprof, for finding where a bench's time went),
# MKUEUE_WORKER<N>_PORT (manager + 10 + N), MKUEUE_MANAGER_KUEUE_PORT
# (manager + 5), MKUEUE_PORT_BASE (19400: the controllers' webhook and health
# ports, base + 10 .. 69), MKUEUE_CACHE (build cache).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
DIR=${MKUEUE_E2E_DIR:-/tmp/mkueue-e2e}
ETCD_PORT=${MKUEUE_ETCD_PORT:-23790}
MAX_WORKERS=8
PIDS="$DIR/pids"
MK_PIDS="$DIR/pids-manager-kueue" # the optional manager-kueue's processes
WORKERS_FILE="$DIR/workers"       # the running bed's workers, one a line
log() { echo "testbed: $*" >&2; }

BED=$("$HERE/scripts/build-testbed.sh")
PATH="$BED/bin:$PATH"

# worker_port N: MKUEUE_WORKER<N>_PORT; by default 16444 and 16445 for
# workers 1 and 2, the manager's + 10 + N for workers 3 to 8 (the manager's
# + 3 to + 5 are taken by the default webhook ports and manager-kueue)
worker_port() {
    local v="MKUEUE_WORKER${1}_PORT" def=$((PORT[manager] + 10 + $1))
    case $1 in 1) def=16444 ;; 2) def=16445 ;; esac
    echo "${!v:-$def}"
}

declare -A PORT=([manager]=${MKUEUE_MANAGER_PORT:-16443})
PORT[manager-kueue]=${MKUEUE_MANAGER_KUEUE_PORT:-$((PORT[manager] + 5))}
for _n in $(seq $MAX_WORKERS); do PORT[worker-$_n]=$(worker_port "$_n"); done

# set_workers [setting]: WORKERS and CLUSTERS of the bed: those recorded in
# $WORKERS_FILE by `up` and `up-cluster worker-N`, else (or with `setting`)
# worker-1 .. worker-$MKUEUE_WORKERS (default 2, at most 8).
set_workers() {
    if [ "${1:-}" != setting ] && [ -s "$WORKERS_FILE" ]; then
        mapfile -t WORKERS <"$WORKERS_FILE"
    else
        local n=${MKUEUE_WORKERS:-2}
        [[ "$n" =~ ^[1-8]$ ]] || { log "MKUEUE_WORKERS=$n: want 1 to $MAX_WORKERS"; exit 2; }
        mapfile -t WORKERS < <(seq -f 'worker-%g' "$n")
    fi
    CLUSTERS=(manager "${WORKERS[@]}")
}
set_workers
PORT_BASE=${MKUEUE_PORT_BASE:-19400}
# Workers 3..N run Kueue for batch Jobs only, without the job kinds' CRDs and
# the JobSet and LeaderWorkerSet controllers, when MKUEUE_WORKER_EXTRAS=0
EXTRAS=${MKUEUE_WORKER_EXTRAS:-1}

# full CLUSTER: a cluster with every job kind (not a lean bench worker)
full() {
    local n=${1#worker-}
    [ "$EXTRAS" != 0 ] || [ "$1" = manager ] || [ "$1" = manager-kueue ] || [ "$n" -le 2 ]
}

# ctl_port CONTROLLER CLUSTER PURPOSE: fixed ports per controller and
# cluster n (worker-n; manager-kueue is 0). Each controller c (kueue 1,
# jobset 2, lws 3) has a decade per five clusters, decade c + 3 * (n / 5);
# in it, cluster n % 5 listens at + n % 5 (webhook) and + 5 + n % 5 (health).
# So Kueue 19411.. and 19416.. (manager-kueue's 19410, 19415), JobSet
# 19421.., LWS 19431..; workers 5 to 8 in 19440 to 19469.
ctl_port() {
    local c n=${2#worker-} off=0
    [ "$2" = manager-kueue ] && n=0
    case $1 in kueue) c=1 ;; jobset) c=2 ;; lws) c=3 ;; esac
    [ "$3" = health ] && off=5
    echo $((PORT_BASE + (c + 3 * (n / 5)) * 10 + n % 5 + off))
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
    gone "$1" 50 || true
    while read -r pid name; do kill -KILL -- "-$pid" 2>/dev/null || true; done <"$1"
    # a killed API server of a GiB or more takes a moment to exit and free its port
    gone "$1" 100 || log "still exiting after SIGKILL: $1"
    rm -f "$1"
}

# gone FILE TENTHS: waits up to TENTHS/10 s for FILE's processes to exit
gone() {
    local pid name alive
    for _ in $(seq "$2"); do
        alive=0
        while read -r pid name; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$1"
        [ $alive = 0 ] && return 0
        sleep 0.1
    done
    return 1
}

# every process of the bed, whatever its size: the clusters of up-cluster
# first (they need the bed's etcd), then the bed's own
stop_all() {
    local f
    stop_components
    for f in "$DIR"/pids-*; do stop_list "$f"; done
    stop_list "$PIDS"
    rm -f "$WORKERS_FILE"
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
# A lean worker (MKUEUE_WORKER_EXTRAS=0) gets Kueue's CRDs only.
install_crds() {
    local c=$1 crds=(-f "$BED/manifests/kueue/crds/")
    [ "$c" = manager ] && crds=(-f "$ROOT/charts/mkueue/crds/")
    full "$c" && crds+=(-f "$BED/manifests/jobs/")
    # retried: a loaded API server times out on the large CRDs now and then
    wait_for "CRDs applied on $c" 300 kc "$c" apply --server-side "${crds[@]}"
    # one long wait: `kubectl wait --all` waits object by object within one
    # timeout, which a short timeout never meets on a loaded machine
    wait_for "CRDs of $c" 180 kc "$c" wait --for=condition=Established --timeout=120s crd --all
    # the Kubeflow trainer's runtime that TrainJobs refer to
    full "$c" || return 0
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
    # Client rate and concurrency as in Kueue's release configuration (its
    # manifests and chart), on the workers too: the code's defaults (20
    # queries/s, burst 30, one reconcile at a time) are not what users run,
    # and a worker's Kueue at 20/s holds its admissions back once a few
    # dozen dispatched jobs run there (docs/performance.md, session 19)
    local extra="clientConnection: {qps: 50, burst: 100}
controller: {groupKindConcurrency: {Job.batch: 5, Pod: 5, Workload.kueue.x-k8s.io: 5,
  LocalQueue.kueue.x-k8s.io: 1, ClusterQueue.kueue.x-k8s.io: 1, ResourceFlavor.kueue.x-k8s.io: 1}}"
    if [ "$c" = manager-kueue ]; then
        # MultiKueue (beta, on by default) gates Kueue's MultiKueue
        # controllers and indexers; the core, the scheduler and the Job
        # integration keep running, and mkueue is the check's controller.
        # MKUEUE_MANAGER_KUEUE_MULTIKUEUE=1 leaves it on: Kueue's own
        # MultiKueue manager (the bench's mode kueue).
        frameworks="[batch/job]"
        [ "${MKUEUE_MANAGER_KUEUE_MULTIKUEUE:-0}" = 1 ] || gates+=,MultiKueue=false
        extra+="
multiKueue: {gcInterval: 1m, origin: multikueue, workerLostTimeout: 15m}"
    elif ! full "$c"; then
        frameworks="[batch/job]" # a lean worker has no other job kind's CRD
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
        --profiling="${MKUEUE_APISERVER_PROFILING:-false}" --event-ttl 10m
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


# start_controllers WORKER: Kueue, and on a full worker JobSet and LWS.
start_controllers() {
    start_kueue "$1"
    full "$1" && start_jobset_lws "$1"
    return 0
}

# wait_controllers WORKER: its controllers and nodes ready. The waits grow
# with the bed: on 2 cores, N workers' controllers start side by side.
wait_controllers() {
    local c=$1 n=${#WORKERS[@]} name
    wait_for "kueue on $c" $((60 + 30 * n)) healthy "$(ctl_port kueue "$c" health)"
    if full "$c"; then
        for name in jobset lws; do
            wait_for "$name on $c" $((30 + 15 * n)) healthy "$(ctl_port $name "$c" health)"
        done
    fi
}

wait_nodes() { wait_for "nodes of $1" 60 kc "$1" wait --for=condition=Ready node --all --timeout=30s; }

# ports_free CLUSTER...: none of the clusters' API and controller ports is taken
ports_free() {
    local c p ctl
    for c in "$@"; do
        local ports=("${PORT[$c]}")
        if [ "$c" != manager ]; then
            for ctl in kueue jobset lws; do ports+=("$(ctl_port $ctl "$c" webhook)" "$(ctl_port $ctl "$c" health)"); done
        fi
        for p in "${ports[@]}"; do
            port_busy "$p" && { log "port $p ($c) is in use; set MKUEUE_*_PORT or MKUEUE_PORT_BASE"; return 1; }
        done
    done
    return 0
}

up() {
    if running; then
        log "already running (state in $DIR)"
        return 0
    fi
    stop_all
    set_workers setting
    local p c i t0=$SECONDS
    for p in "$ETCD_PORT" $((ETCD_PORT + 1)); do
        port_busy "$p" && { log "port $p is in use; set MKUEUE_ETCD_PORT"; return 1; }
    done
    ports_free "${CLUSTERS[@]}" || return 1
    mkdir -p "$DIR/logs" "$DIR/kubeconfig" "$DIR/conf"
    rm -rf "$DIR/etcd"
    printf '%s\n' "${WORKERS[@]}" >"$WORKERS_FILE"
    for c in "${CLUSTERS[@]}"; do pki "$c"; done

    start etcd etcd --name mkueue-e2e --data-dir "$DIR/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-cluster "mkueue-e2e=http://127.0.0.1:$((ETCD_PORT + 1))" \
        --quota-backend-bytes 4294967296 --unsafe-no-fsync --log-level warn

    # Staggered for 2 cores: three API servers start at once (the default
    # bed's all); each further one starts when the cluster three before it
    # gets its plane, and each worker's controllers start while the next
    # cluster installs its CRDs. So at most three API servers and one
    # controller set start at the same time, whatever the bed's size.
    for c in "${CLUSTERS[@]:0:3}"; do start_apiserver "$c" "/$c"; done
    for i in "${!CLUSTERS[@]}"; do
        c=${CLUSTERS[$i]}
        [ -n "${CLUSTERS[$((i + 3))]:-}" ] && start_apiserver "${CLUSTERS[$((i + 3))]}" "/${CLUSTERS[$((i + 3))]}"
        start_plane "$c"
        [ "$c" = manager ] || start_controllers "$c"
    done
    for c in "${WORKERS[@]}"; do wait_controllers "$c"; done
    for c in "${CLUSTERS[@]}"; do wait_nodes "$c"; done
    merged
    local where="" c
    for c in "${CLUSTERS[@]}"; do where+="$c :${PORT[$c]}, "; done
    log "up in $((SECONDS - t0)) s: ${where%, }; KUBECONFIG=$DIR/kubeconfig/all.yaml"
}

# up_cluster manager-kueue|worker-N: an optional cluster beside a running bed
# (idempotent), its processes listed in $DIR/pids-CLUSTER. A fresh etcd
# prefix each time, so it always starts empty. worker-N (N up to 8, not yet
# in the bed) joins the bed's workers: a bench adds workers to a running bed.
up_cluster() {
    local c=${1:-} list
    case $c in
    manager-kueue) ;;
    worker-[1-8])
        if [ ! -f "$DIR/pids-$c" ] && printf '%s\n' "${WORKERS[@]}" | grep -qx "$c"; then
            log "$c is one of the bed's workers"
            return 0
        fi ;;
    *) log "up-cluster: manager-kueue or worker-1 .. worker-$MAX_WORKERS"; return 2 ;;
    esac
    list="$DIR/pids-$c"
    running || { log "up-cluster: the bed is not running (testbed.sh up)"; return 1; }
    if running "$list" && healthy "$(ctl_port kueue "$c" health)" >/dev/null 2>&1; then
        log "$c already running"
        return 0
    fi
    stop_list "$list"
    ports_free "$c" || return 1
    local t0=$SECONDS
    pki "$c"
    START_PIDS=$list
    : >"$list"
    start_apiserver "$c" "/$c-$(date +%s%N)"
    start_plane "$c"
    if [ "$c" = manager-kueue ]; then
        start_kueue "$c"
        wait_for "kueue on $c" 120 healthy "$(ctl_port kueue "$c" health)"
    else
        start_controllers "$c"
        wait_controllers "$c"
        printf '%s\n' "${WORKERS[@]}" "$c" | sort -t- -k2n -u >"$WORKERS_FILE"
        set_workers
    fi
    wait_nodes "$c"
    merged
    log "up in $((SECONDS - t0)) s: $c :${PORT[$c]} (context $c)"
}

# down_cluster CLUSTER: stops a cluster started by up-cluster
down_cluster() {
    local c=${1:-}
    [ -f "$DIR/pids-$c" ] || { log "down-cluster: $c was not started by up-cluster"; return 0; }
    stop_list "$DIR/pids-$c"
    if [ "$c" != manager-kueue ]; then
        printf '%s\n' "${WORKERS[@]}" | grep -vx "$c" >"$WORKERS_FILE" || true
        set_workers
    fi
    [ -f "$PIDS" ] && merged
    log "$c down"
}

merged() {
    local files="" c
    for c in "${CLUSTERS[@]}"; do files+="$DIR/kubeconfig/$c.yaml:"; done
    [ -f "$MK_PIDS" ] && files+="$DIR/kubeconfig/manager-kueue.yaml:"
    install -m 600 /dev/null "$DIR/kubeconfig/all.yaml"
    KUBECONFIG=${files%:} kubectl config view --flatten >"$DIR/kubeconfig/all.yaml"
    kubectl --kubeconfig "$DIR/kubeconfig/all.yaml" config use-context manager >/dev/null
}

# ports: every port a bed of the largest size can take, "CLUSTER WHAT PORT"
# a line: etcd, the API servers of the manager, manager-kueue and 8 workers,
# and the controllers' webhook and health ports
ports() {
    local c ctl
    echo "etcd client $ETCD_PORT"
    echo "etcd peer $((ETCD_PORT + 1))"
    for c in manager manager-kueue $(seq -f 'worker-%g' $MAX_WORKERS); do
        echo "$c api ${PORT[$c]}"
        [ "$c" = manager ] && continue
        for ctl in kueue jobset lws; do
            [ "$c" = manager-kueue ] && [ $ctl != kueue ] && continue
            echo "$c $ctl-webhook $(ctl_port $ctl "$c" webhook)"
            echo "$c $ctl-health $(ctl_port $ctl "$c" health)"
        done
    done
}

status() {
    if running; then log "running (state in $DIR)"; else log "not running"; fi
    log "workers: ${WORKERS[*]}"
    local f
    for f in "$PIDS" "$DIR"/pids-*; do [ -f "$f" ] && cat "$f"; done
    cat "$BED/versions"
    return 0
}

case "${1:-}" in
up) up ;;
down) stop_all; log "down" ;;
up-cluster) up_cluster "${2:-}" ;;
down-cluster) down_cluster "${2:-}" ;;
status) status ;;
ports) ports ;;
env)
    echo "export KUBECONFIG=$DIR/kubeconfig/all.yaml"
    echo "export MKUEUE_E2E_DIR=$DIR"
    echo "export MKUEUE_BED=$BED"
    echo "export PATH=$BED/bin:\$PATH"
    echo "export HELM=$BED/bin/helm"
    echo "export MKUEUE_BED_WORKERS='${WORKERS[*]}'"
    for c in "${CLUSTERS[@]}" manager-kueue; do echo "export MKUEUE_PORT_${c//-/_}=${PORT[$c]}"; done ;;
*) echo "usage: $0 up|down|status|env|ports|up-cluster CLUSTER|down-cluster CLUSTER (manager-kueue, worker-N)" >&2; exit 2 ;;
esac
