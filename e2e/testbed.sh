#!/usr/bin/env bash
# Three real Kubernetes control planes on loopback: `manager`, `worker-1`,
# `worker-2`. One etcd (a prefix per cluster), a kube-apiserver and a
# kube-controller-manager per cluster, TLS everywhere, client-cert admin,
# RBAC, service-account keys; on each worker the Kueue test double
# (e2e/standin). No kubelet: pods never run, tests finish work by patching
# status.
#
#   e2e/testbed.sh up      start (idempotent: an already running bed is kept)
#   e2e/testbed.sh down    stop every process and free the ports
#   e2e/testbed.sh status  show what runs
#   e2e/testbed.sh env     print the variables to source (KUBECONFIG ...)
#
# Settings (environment): MKUEUE_E2E_DIR (state, default /tmp/mkueue-e2e),
# MKUEUE_ETCD_PORT (23790), MKUEUE_MANAGER_PORT (16443), MKUEUE_WORKER1_PORT
# (16444), MKUEUE_WORKER2_PORT (16445), MKUEUE_CACHE (binary cache).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PATH="$("$HERE/scripts/install-kubectl.sh"):$PATH" # kubectl >= 1.24
ROOT=$(cd "$HERE/.." && pwd)
DIR=${MKUEUE_E2E_DIR:-/tmp/mkueue-e2e}
ETCD_PORT=${MKUEUE_ETCD_PORT:-23790}
declare -A PORT=([manager]=${MKUEUE_MANAGER_PORT:-16443}
                 [worker-1]=${MKUEUE_WORKER1_PORT:-16444}
                 [worker-2]=${MKUEUE_WORKER2_PORT:-16445})
CLUSTERS=(manager worker-1 worker-2)
PIDS="$DIR/pids"
STANDIN=${MKUEUE_STANDIN:-$ROOT/build/kueue-standin}
log() { echo "testbed: $*" >&2; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start NAME CMD... : runs CMD in its own session, logs to $DIR/logs/NAME.log
start() {
    local name=$1; shift
    setsid "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
    echo "$! $name" >>"$PIDS"
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

stop_all() {
    stop_components
    [ -f "$PIDS" ] || return 0
    local pid name
    # reverse order: controllers, apiservers, then etcd
    tac "$PIDS" | while read -r pid name; do
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    done
    for _ in $(seq 50); do
        local alive=0
        while read -r pid name; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$PIDS"
        [ $alive = 0 ] && break
        sleep 0.1
    done
    while read -r pid name; do kill -KILL -- "-$pid" 2>/dev/null || true; done <"$PIDS"
    rm -f "$PIDS"
}

running() {
    [ -f "$PIDS" ] || return 1
    local pid name
    while read -r pid name; do kill -0 "$pid" 2>/dev/null || return 1; done <"$PIDS"
}

pki() {
    local c=$1 d="$DIR/pki/$1"
    "$ROOT/certs/gen.sh" ca "$d" ca "$c-ca"
    "$ROOT/certs/gen.sh" serving "$d" apiserver ca kube-apiserver \
        "127.0.0.1,localhost,kubernetes,kubernetes.default,kubernetes.default.svc"
    "$ROOT/certs/gen.sh" client "$d" admin ca "$c-admin" system:masters
    "$ROOT/certs/gen.sh" client "$d" kcm ca system:kube-controller-manager
    "$ROOT/certs/gen.sh" sa "$d" sa
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

wait_ready() {
    local c=$1 i
    for i in $(seq 300); do
        if kubectl --kubeconfig "$DIR/kubeconfig/$c.yaml" get --raw /readyz >/dev/null 2>&1; then
            return 0
        fi
        if ! running; then
            log "a process died while $c was starting; see $DIR/logs"
            tail -n 20 "$DIR/logs/apiserver-$c.log" >&2 || true
            return 1
        fi
        sleep 0.2
    done
    log "$c did not become ready in 60s"
    return 1
}

install_crds() {
    local c=$1 k="kubectl --kubeconfig $DIR/kubeconfig/$1.yaml"
    local files=("$ROOT"/charts/mkueue/crds/*.yaml "$ROOT"/e2e/crds/*.yaml)
    [ -e "${files[0]}" ] || return 0
    $k apply -f "$ROOT/charts/mkueue/crds/" >/dev/null
    [ -d "$ROOT/e2e/crds" ] && $k apply -f "$ROOT/e2e/crds/" >/dev/null
    $k wait --for=condition=Established --timeout=60s crd --all >/dev/null
}

up() {
    if running; then
        log "already running (state in $DIR)"
        return 0
    fi
    stop_all
    local kube
    kube=$("$HERE/scripts/build-kube.sh")
    [ -x "$STANDIN" ] || { log "$STANDIN is missing: run 'make e2e-up'"; return 1; }
    for p in "$ETCD_PORT" $((ETCD_PORT + 1)) "${PORT[@]}"; do
        port_busy "$p" && { log "port $p is in use; set MKUEUE_*_PORT"; return 1; }
    done
    mkdir -p "$DIR/logs" "$DIR/kubeconfig"
    rm -rf "$DIR/etcd"
    local c
    for c in "${CLUSTERS[@]}"; do pki "$c"; done

    start etcd etcd --name mkueue-e2e --data-dir "$DIR/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-cluster "mkueue-e2e=http://127.0.0.1:$((ETCD_PORT + 1))" \
        --quota-backend-bytes 4294967296 --unsafe-no-fsync

    for c in "${CLUSTERS[@]}"; do
        local d="$DIR/pki/$c"
        kubeconfig "$DIR/kubeconfig/$c.yaml" "$c" admin
        kubeconfig "$DIR/kubeconfig/$c-kcm.yaml" "$c" kcm
        start "apiserver-$c" "$kube/kube-apiserver" \
            --etcd-servers "http://127.0.0.1:$ETCD_PORT" --etcd-prefix "/$c" \
            --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
            --secure-port "${PORT[$c]}" --insecure-port 0 \
            --tls-cert-file "$d/apiserver.crt" --tls-private-key-file "$d/apiserver.key" \
            --client-ca-file "$d/ca.crt" \
            --service-account-key-file "$d/sa.pub" \
            --service-account-signing-key-file "$d/sa.key" \
            --service-account-issuer "https://kubernetes.default.svc" \
            --api-audiences "https://kubernetes.default.svc" \
            --authorization-mode RBAC --service-cluster-ip-range 10.96.0.0/16 \
            --enable-priority-and-fairness=false --profiling=false \
            --event-ttl 10m
    done

    # Job controller off on the manager: stands in for spec.managedBy (K8s >= 1.30).
    local base='*,-nodeipam,-nodelifecycle,-attachdetach,-persistentvolume-binder,-persistentvolume-expander,-cloud-node-lifecycle,-route,-service,-bootstrapsigner,-tokencleaner,-csrsigning'
    for c in "${CLUSTERS[@]}"; do
        wait_ready "$c"
        local d="$DIR/pki/$c" ctl=$base
        [ "$c" = manager ] && ctl="$base,-job,-cronjob"
        start "kcm-$c" "$kube/kube-controller-manager" \
            --kubeconfig "$DIR/kubeconfig/$c-kcm.yaml" \
            --service-account-private-key-file "$d/sa.key" --root-ca-file "$d/ca.crt" \
            --use-service-account-credentials=true \
            --leader-elect=false --port 0 --secure-port 0 --controllers "$ctl"
        install_crds "$c"
        if [ "$c" != manager ]; then
            start "kueue-standin-$c" "$STANDIN" --kubeconfig "$DIR/kubeconfig/$c.yaml" --name "$c"
        fi
    done
    merged
    log "up: manager :${PORT[manager]}, worker-1 :${PORT[worker-1]}, worker-2 :${PORT[worker-2]}; KUBECONFIG=$DIR/kubeconfig/all.yaml"
}

merged() {
    local files="" c
    for c in "${CLUSTERS[@]}"; do files+="$DIR/kubeconfig/$c.yaml:"; done
    install -m 600 /dev/null "$DIR/kubeconfig/all.yaml"
    KUBECONFIG=${files%:} kubectl config view --flatten >"$DIR/kubeconfig/all.yaml"
    kubectl --kubeconfig "$DIR/kubeconfig/all.yaml" config use-context manager >/dev/null
}

status() {
    if running; then log "running (state in $DIR)"; else log "not running"; fi
    [ -f "$PIDS" ] && cat "$PIDS"
    return 0
}

case "${1:-}" in
up) up ;;
down) stop_all; log "down" ;;
status) status ;;
env)
    echo "export KUBECONFIG=$DIR/kubeconfig/all.yaml"
    echo "export MKUEUE_E2E_DIR=$DIR"
    for c in "${CLUSTERS[@]}"; do echo "export MKUEUE_PORT_${c//-/_}=${PORT[$c]}"; done ;;
*) echo "usage: $0 up|down|status|env" >&2; exit 2 ;;
esac
