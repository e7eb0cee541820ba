#!/usr/bin/env bash
# The same workload through three managers, one after the other, each on a
# fresh manager control plane with the same workers (real Kueue + KWOK):
#   mkueue-standalone  the bed's `manager`, mkueue-reconciler and mkueue-webhook
#   mkueue-with-kueue  manager-kueue: real Kueue with its MultiKueue controller
#                      off, mkueue-reconciler --mode with-kueue as the check's
#                      controller, mkueue-webhook
#   kueue              manager-kueue with MKUEUE_MANAGER_KUEUE_MULTIKUEUE=1:
#                      real Kueue doing everything (MultiKueueConfig,
#                      MultiKueueClusters with kubeconfig Secrets in
#                      kueue-system, its job webhook setting managedBy)
# Per mode (figures in build/bench/managers-w<W>.json, table by render.py):
#   - apply -> remote job exists and remote Complete -> manager Complete,
#     p50/p99 over BENCH_N jobs at BENCH_RATE/s (rc_bench latency), then
#     again at BENCH_RATE_LOW/s, a pace the manager's 50 queries/s carry (at
#     10/s the managers ask for about 100 writes/s: the first run measures
#     the queue behind the client's rate limit);
#   - BENCH_M jobs created at once by BENCH_THREADS threads: jobs/s and the
#     seconds until the last remote job exists (rc_bench throughput);
#   - the manager-side controllers' RSS (VmRSS, MiB) and CPU seconds
#     (utime + stime from /proc/PID/stat): idle, with BENCH_RUNNING jobs
#     running on the workers, and with each of BENCH_TRACKED Workloads on
#     the manager (jobs in a ClusterQueue without quota; measured once the
#     manager has written them, at most 300 + T/15 s), then mkueue's
#     reconciler restarted on them; the reconciler alone beside (rss_rc_*);
#   - at each tracked level, BENCH_N_TRACKED jobs dispatched at
#     BENCH_RATE_LOW/s (rc_bench latency, keys m_tracked_<T>_*): the
#     controllers' CPU per dispatched job (stage dispatch_tracked_<T>) and
#     p50/p99 with T Workloads tracked, beside the paced run's (about none);
#   - the manager API server's writes per job during each latency run, from
#     every client (the bench's own job creates included; Events apart);
#   - the floor (the same API calls made directly, at the same count and
#     pace) in mode mkueue-standalone only: after each latency run and at
#     each tracked level;
#   - in that mode too, BENCH_PAIRS more runs of BENCH_N jobs at
#     BENCH_RATE_LOW/s, each beside a floor run taken right before or after
#     it (keys m_pair<K>_*): the goal's ratio as the median of the pairs'
#     (render.py), not as one run's;
#   - every timed run (and its floor) placed between the bed's periodic
#     OpenAPI rebuilds (clear_of_stall), the seconds waited for that in
#     stall_waited_s, what a run still held in *bed_stall_s.
# Settings: BENCH_MODES (default all three, in that order), MKUEUE_WORKERS
# (2: worker-1..worker-W of the bed), BENCH_N 200, BENCH_RATE 10,
# BENCH_RATE_LOW 3 ("" or 0 skips the second latency run), BENCH_M
# 2000, BENCH_THREADS 8, BENCH_RUNNING 1000, BENCH_TRACKED "10000 50000"
# ("" skips), BENCH_WARM 50 (jobs dispatched at BENCH_RATE before a
# mode's first measured run, not measured), BENCH_N_TRACKED 100 (jobs
# dispatched at each tracked level, at BENCH_RATE_LOW/s or 3/s; 0 skips),
# BENCH_QUIET_TIMEOUT 300 and
# BENCH_QUIET_WRITES 5 (`quiet`, below), BENCH_PAIRS 4 (interleaved runs
# of mkueue and its floor, `pairs` below; 0 skips), BENCH_KEEP_BED=1 (keep a running
# bed, leave it up), BENCH_TIMELINE=1 (mkueue's reconciler at --log-level
# info, and after each of its latency runs and pairs where the dispatch spent its
# time, e2e/bench/timeline.py, how long each kind of key waited in the
# reconciler's work queues for a thread, and per API server how long its
# requests took to be answered and waited for the client's qps budget
# (e2e/bench/waits.py), in
# build/bench/timeline-<mode>-w<W>.txt).
# The table covers the modes of this run and those of an earlier run not
# run again (build/bench/kv-w<W>/<mode>.kv).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export MKUEUE_E2E_DIR=${MKUEUE_E2E_DIR:-/tmp/mkueue-bench}
export MKUEUE_ETCD_PORT=${MKUEUE_ETCD_PORT:-24400}
export MKUEUE_MANAGER_PORT=${MKUEUE_MANAGER_PORT:-17400}
export MKUEUE_WORKER1_PORT=${MKUEUE_WORKER1_PORT:-17401}
export MKUEUE_WORKER2_PORT=${MKUEUE_WORKER2_PORT:-17402}
export MKUEUE_PORT_BASE=${MKUEUE_PORT_BASE:-20400}
MODES=${BENCH_MODES:-mkueue-standalone mkueue-with-kueue kueue}
W=${MKUEUE_WORKERS:-2}
N=${BENCH_N:-200} RATE=${BENCH_RATE:-10} RATE_LOW=${BENCH_RATE_LOW-3} M=${BENCH_M:-2000} THREADS=${BENCH_THREADS:-8}
if [ "$RATE_LOW" = 0 ]; then RATE_LOW=; fi # 0 skips the second latency run, as "" does
WARM=${BENCH_WARM:-50}
[ "$WARM" -ge 1 ] || WARM=1 # at least one job through the chain
RUNNING=${BENCH_RUNNING:-1000}
TRACKED=${BENCH_TRACKED-10000 50000}
N_TRACKED=${BENCH_N_TRACKED:-100} RATE_TRACKED=${RATE_LOW:-3}
PAIRS=${BENCH_PAIRS:-4} RATE_PAIRS=${RATE_LOW:-3}
RC_PORT=${BENCH_METRICS_PORT:-18399}
RC_LOG=warn
[ "${BENCH_TIMELINE:-0}" = 1 ] && RC_LOG=info
WH_PORT=${BENCH_WEBHOOK_PORT:-18397}
WH_MPORT=$((WH_PORT + 1))
BENCH=$ROOT/build/rc_bench
OUT=$ROOT/build/bench
KV=$OUT/kv-w$W
TB=$ROOT/e2e/testbed.sh
HZ=$(getconf CLK_TCK)
WORKERS=()
for i in $(seq "$W"); do WORKERS+=("worker-$i"); done
# bench-low: the second latency run's jobs
NSS=(bench bench-low bench-warm bench-run bench-idle bench-pair)
log() { echo "bench-managers: $(date +%T) $*" >&2; }

cleanup() {
    stop_ours
    [ "${BENCH_KEEP_BED:-0}" = 1 ] || "$TB" down >/dev/null 2>&1 || true
}
trap cleanup EXIT

# ---- the bed ------------------------------------------------------------------
[ "${BENCH_KEEP_BED:-0}" = 1 ] || "$TB" down >/dev/null 2>&1 || true
"$TB" up
eval "$("$TB" env)"
k() { kubectl --context "$1" "${@:2}"; }

# wait_until SECONDS WHAT CMD...: retries CMD each second
wait_until() {
    local n=$1 what=$2 i
    shift 2
    for i in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
    log "timed out after $n s waiting for $what"
    return 1
}

# Fake nodes enough for BENCH_RUNNING pods at once (110 pods each), once.
more_nodes() {
    local w i n=$(((RUNNING / W + 109) / 110 + 1))
    for w in "${WORKERS[@]}"; do
        for i in $(seq "$n"); do
            k "$w" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $w-bench-node-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, kubernetes.io/hostname: $w-bench-node-$i, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
status:
  allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4", pods: "110"}
  capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4", pods: "110"}
YAML
        done
        k "$w" taint nodes -l type=kwok node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
    done
}

# queues CONTEXT: the bench namespaces, each with LocalQueue team-a
queues() {
    local ns
    for ns in "${NSS[@]}"; do
        k "$1" create ns "$ns" >/dev/null 2>&1 || true
        k "$1" apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $ns, name: team-a}
spec: {clusterQueue: team-a-cq}
YAML
    done
}

gone() { ! k "$1" get "$2" "$3" >/dev/null 2>&1; }

# The workers between modes: the bench namespaces deleted (and gone) and made again.
clean_workers() {
    local w ns
    for w in "${WORKERS[@]}"; do
        k "$w" apply -f "$ROOT/e2e/manifests/worker.yaml" >/dev/null
        k "$w" delete ns "${NSS[@]}" --ignore-not-found --wait=false >/dev/null
    done
    for w in "${WORKERS[@]}"; do
        for ns in "${NSS[@]}"; do wait_until 600 "ns $ns gone on $w" gone "$w" ns "$ns"; done
        queues "$w"
        # the queue of the tracked jobs exists on the workers too, else
        # mkueue's webhook refuses them (they never reach a worker)
        k "$w" apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: bench-idle, name: idle}
spec: {clusterQueue: team-a-cq}
YAML
    done
}

# manager CONTEXT SECRET-NS: the MultiKueue chain (e2e/manifests/manager.yaml,
# then workers-manifest.sh: W workers, their kubeconfig Secrets in
# SECRET-NS), the bench namespaces, and bench-idle's ClusterQueue without
# quota (its jobs stay tracked).
manager() {
    local c=$1 i
    k "$c" apply -f "$ROOT/e2e/manifests/manager.yaml" >/dev/null
    k "$c" create ns "$2" >/dev/null 2>&1 || true
    "$ROOT/e2e/scripts/workers-manifest.sh" "$W" "$2" | k "$c" apply -f - >/dev/null
    # a kept bed's earlier run: its controllers are gone, their finalizers stay
    for ns in "${NSS[@]}"; do
        k "$c" delete ns "$ns" --ignore-not-found --wait=false >/dev/null
        k "$c" -n "$ns" get workloads,jobs -o name 2>/dev/null | xargs -r -P 8 -I{} \
            kubectl --context "$c" -n "$ns" patch {} --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
        wait_until 600 "ns $ns gone on $c" gone "$c" ns "$ns"
    done
    queues "$c"
    k "$c" apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: bench-idle-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 0}]
  admissionChecksStrategy:
    admissionChecks: [{name: multikueue-ac}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: bench-idle, name: idle}
spec: {clusterQueue: bench-idle-cq}
YAML
}

# ---- our processes ----------------------------------------------------------------
# start NAME CMD...: in its own session, pid in $MKUEUE_E2E_DIR/run (testbed down stops it)
start() {
    local name=$1
    shift
    mkdir -p "$MKUEUE_E2E_DIR/run"
    setsid "$@" >"$MKUEUE_E2E_DIR/logs/bench-$name.log" 2>&1 </dev/null &
    echo $! >"$MKUEUE_E2E_DIR/run/bench-$name.pid"
}
pid_of() { cat "$MKUEUE_E2E_DIR/run/bench-$1.pid"; }

CTX=""
# stop_one NAME: our process NAME's group, TERM then KILL (it is our child:
# kill -0 would still see it as a zombie, so no waiting on it)
stop_one() {
    local f=$MKUEUE_E2E_DIR/run/bench-$1.pid
    [ -e "$f" ] || return 0
    kill -TERM -- "-$(cat "$f")" 2>/dev/null || true
    sleep 0.5
    kill -KILL -- "-$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
}
stop_ours() {
    local f
    [ -n "$CTX" ] && k "$CTX" delete mutatingwebhookconfiguration,validatingwebhookconfiguration \
        mkueue-bench --ignore-not-found >/dev/null 2>&1 || true
    for f in "$MKUEUE_E2E_DIR"/run/bench-*.pid; do
        [ -e "$f" ] || continue
        f=${f##*/bench-}
        stop_one "${f%.pid}"
    done
}

# webhook CONTEXT: mkueue-webhook against CONTEXT, registered for batch Jobs
# as the chart does (kube-system and mkueue-system left out)
webhook() {
    local d=$MKUEUE_E2E_DIR/bench-webhook-certs kind verb ca w
    "$ROOT/certs/gen.sh" webhook "$d" >/dev/null
    start webhook "$ROOT/bin/mkueue-webhook" --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/$1.yaml" \
        --namespace mkueue-system --cert-dir "$d" --bind-address 127.0.0.1 --port "$WH_PORT" \
        --metrics-bind-address 127.0.0.1 --metrics-port "$WH_MPORT" --log-level warn
    wait_until 60 "mkueue-webhook ready" curl -sf "http://127.0.0.1:$WH_MPORT/readyz"
    for w in "${WORKERS[@]}"; do
        wait_until 60 "webhook synced with $w" bash -c "curl -sf http://127.0.0.1:$WH_MPORT/metrics |
            grep -qx 'mkueue_webhook_cache_synced{cluster=\"$w\"} 1'"
    done
    ca=$(base64 -w0 <"$d/ca.crt")
    for kind in Mutating Validating; do
        verb=mutate
        [ $kind = Validating ] && verb=validate
        k "$1" apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ${kind}WebhookConfiguration
metadata: {name: mkueue-bench}
webhooks:
- name: $verb-job.mkueue.x-k8s.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 10
  clientConfig:
    url: https://127.0.0.1:$WH_PORT/$verb-batch-v1-job
    caBundle: $ca
  rules:
  - {apiGroups: [batch], apiVersions: [v1], resources: [jobs], operations: [CREATE, UPDATE]}
  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, mkueue-system]}]}
YAML
    done
}

# reconciler CONTEXT MODE: mkueue-reconciler with the chart's defaults
# (charts/mkueue/values.yaml: workers, clientConnection, workerConnection);
# BENCH_RC_FLAGS adds or overrides flags
reconciler() {
    # shellcheck disable=SC2086
    start reconciler "$ROOT/bin/mkueue-reconciler" --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/$1.yaml" \
        --mode "$2" --leader-elect=false --metrics-addr "127.0.0.1:$RC_PORT" --log-level "$RC_LOG" \
        --integrations batch/job --workers 8 --qps 50 --burst 100 --worker-qps 50 --worker-burst 100 \
        ${BENCH_RC_FLAGS:-}
    wait_until 60 "mkueue-reconciler ready" curl -sf "http://127.0.0.1:$RC_PORT/readyz"
}

# ---- figures ------------------------------------------------------------------------
# rss PID...: summed VmRSS in MiB;  cpu PID...: summed utime + stime in seconds
rss() { local p s=0; for p; do s=$((s + $(awk '/^VmRSS/ { print $2 }' "/proc/$p/status"))); done; awk -v s=$s 'BEGIN { printf "%.1f", s / 1024 }'; }
cpu() { printf '%s\n' "$@" | pids_cpu; }

OURS=() KUEUE=() CPU0=0 KCPU0=0 BCPU0=0 WKCPU0=0
declare -A BED0=() # bed_by_name at the last stage or zero
put() { echo "$1 $2" >>"$KV/$MODE.kv"; }
# bed_procs [PATTERN]: "PID NAME" of the live processes of the test bed
# (its pids files: control planes, etcd, the workers' Kueue, KWOK, job
# controllers) whose name matches the shell pattern PATTERN (default: all
# but a manager's Kueue, which is measured as the manager under test)
bed_procs() {
    local f pid name
    for f in "$MKUEUE_E2E_DIR"/pids "$MKUEUE_E2E_DIR"/pids-*; do
        [ -f "$f" ] || continue
        while read -r pid name; do
            # shellcheck disable=SC2053 # PATTERN is a glob on purpose
            [ -z "${1:-}" ] && [[ $name == kueue-manager* ]] && continue
            [[ $name == ${1:-*} ]] && [ -e "/proc/$pid/stat" ] && echo "$pid $name"
        done <"$f"
    done
}
bed_pids() { bed_procs "$@" | cut -d' ' -f1; }
# bed_cpu: CPU seconds of the bed's processes so far, every one and the
# workers' Kueue alone ("ALL WORKERS_KUEUE"): on 2 shared cores, what the
# bed spends per job beside the manager under test is what slows it as
# workers are added
bed_cpu() { echo "$(bed_pids | pids_cpu) $(bed_pids 'kueue-worker-*' | pids_cpu)"; }
# bed_by_name: "NAME CPU_S" for each process of bed_procs, NAME its name
# in the pids files (apiserver-worker-1, kueue-worker-1, ...)
bed_by_name() {
    local pid name
    bed_procs | while read -r pid name; do echo "$name $(echo "$pid" | pids_cpu)"; done
}
# pids_cpu: summed utime + stime in seconds of the pids on stdin (one that
# exited meanwhile is left out, not an error)
pids_cpu() {
    sed 's|.*|/proc/&/stat|' | { xargs -r cat 2>/dev/null || true; } |
        awk -v hz="$HZ" '{ t += $14 + $15 } END { printf "%.2f", t / hz }'
}
# stage NAME: RSS now and the CPU seconds since the last stage, of our
# processes (OURS), beside them of Kueue (KUEUE), and of the bed (bed_cpu)
stage() {
    local b
    read -r -a b <<<"$(bed_cpu)"
    put "bed_cpu_$1_s" "$(awk -v a="${b[0]}" -v z="$BCPU0" 'BEGIN { printf "%.2f", a - z }')"
    put "workers_kueue_cpu_$1_s" "$(awk -v a="${b[1]}" -v z="$WKCPU0" 'BEGIN { printf "%.2f", a - z }')"
    BCPU0=${b[0]} WKCPU0=${b[1]}
    # which of the bed's processes took it: bed_cpu_<stage>_by_<name>_s
    local name c
    while read -r name c; do
        put "bed_cpu_$1_by_${name}_s" "$(awk -v a="$c" -v z="${BED0[$name]:-0}" 'BEGIN { printf "%.2f", a - z }')"
        BED0[$name]=$c
    done < <(bed_by_name)
    if [ ${#OURS[@]} -gt 0 ]; then
        local c; c=$(cpu "${OURS[@]}")
        put "rss_$1_mib" "$(rss "${OURS[@]}")"
        put "rss_rc_$1_mib" "$(rss "${OURS[0]}")" # the reconciler alone
        put "cpu_$1_s" "$(awk -v a="$c" -v b="$CPU0" 'BEGIN { printf "%.2f", a - b }')"
        CPU0=$c
    fi
    if [ ${#KUEUE[@]} -gt 0 ]; then
        local c; c=$(cpu "${KUEUE[@]}")
        local p=kueue_
        [ ${#OURS[@]} -eq 0 ] && p=
        put "${p}rss_$1_mib" "$(rss "${KUEUE[@]}")"
        put "${p}cpu_$1_s" "$(awk -v a="$c" -v b="$KCPU0" 'BEGIN { printf "%.2f", a - b }')"
        KCPU0=$c
    fi
}
zero() {
    CPU0=0 KCPU0=0
    [ ${#OURS[@]} -gt 0 ] && CPU0=$(cpu "${OURS[@]}")
    [ ${#KUEUE[@]} -gt 0 ] && KCPU0=$(cpu "${KUEUE[@]}")
    read -r BCPU0 WKCPU0 <<<"$(bed_cpu)"
    local name c
    while read -r name c; do BED0[$name]=$c; done < <(bed_by_name)
    return 0
}

# Workloads on the manager (one list call: the count the API server keeps)
workloads() {
    k "$CTX" get --raw "/apis/kueue.x-k8s.io/v1beta2/workloads?limit=1" |
        jq '(.metadata.remainingItemCount // 0) + (.items | length)'
}
# remote jobs of namespace NS on all workers
remote_jobs() {
    local w n=0
    for w in "${WORKERS[@]}"; do
        n=$((n + $(k "$w" -n "$1" get jobs -l kueue.x-k8s.io/multikueue-origin -o name | wc -l)))
    done
    echo "$n"
}
# at_least N CMD...: CMD prints a number >= N
at_least() { [ "$("${@:2}")" -ge "$1" ]; }
# active KIND NAME: condition Active is True on the manager
active() { [ "$(k "$CTX" get "$1" "$2" -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" = True ]; }
# manager_writes KIND: requests that wrote to the manager's API server so far,
# from every client (its apiserver_request_total): KIND events counts the
# Events, other the rest but Leases (heartbeats), conflicts the writes of
# any resource refused 409
manager_writes() { writes_of "$CTX" "$1"; }
# conflicts: the manager's writes refused 409 (a precondition on a stale
# resourceVersion), every client
conflicts() { writes_of "$CTX" conflicts; }
writes_of() {
    k "$1" get --raw /metrics | awk -v kind="$2" '
        /^apiserver_request_total\{/ && /verb="(POST|PUT|PATCH|DELETE|APPLY)"/ &&
        !/resource="leases"/ &&
        (kind == "conflicts" ? /code="409"/ : (/resource="events"/ == (kind == "events"))) { n += $NF }
        END { printf "%d\n", n }'
}
# worker_writes: the same (but Events) summed over the workers: what a job
# costs them (the copies, their Kueue's admission, the job controllers)
worker_writes() {
    local w n=0
    for w in "${WORKERS[@]}"; do n=$((n + $(writes_of "$w" other))); done
    echo "$n"
}
# settle: the same quiet time for every mode (mkueue trims its heap every 30 s)
settle() { sleep "${BENCH_SETTLE:-35}"; }

# count CONTEXT PATH: the objects of list PATH (one list call)
count() { k "$1" get --raw "$2?limit=1" | jq -e '(.metadata.remainingItemCount // 0) + (.items | length)'; }
# left NS: Jobs and Workloads of NS on the manager, and the remote ones (the
# origin label) on the workers; nothing printed when a list fails (the
# workers' other objects, the floor's among them, are not the manager's)
left() {
    local w n j r
    j=$(count "$CTX" "/apis/batch/v1/namespaces/$1/jobs") || return 1
    n=$(count "$CTX" "/apis/kueue.x-k8s.io/v1beta2/namespaces/$1/workloads") || return 1
    n=$((n + j))
    for w in "${WORKERS[@]}"; do
        r=$(k "$w" -n "$1" get jobs,workloads -l kueue.x-k8s.io/multikueue-origin -o name | wc -l) || return 1
        n=$((n + r))
    done
    echo "$n"
}
# quiet NS: the earlier run's jobs of NS gone and the manager's writes done
# before the next measurement. rc_bench's jobs have no
# ttlSecondsAfterFinished: they stay when finished, so they are deleted here
# (one delete of the collection, Background: their Workloads go by the
# garbage collector, the remote ones by the manager), then waited for until
# no Job or Workload of NS is left on the manager nor a remote one on a
# worker (rc_bench reuses the names lat-K, and would see a remote job left
# over as just dispatched); then until the manager's writes (manager_writes
# other: every client, Events apart) grow by at most BENCH_QUIET_WRITES (5)
# in 5 s. At most BENCH_QUIET_TIMEOUT seconds (300) in all: then it says so
# and goes on. The CPU of this wait is nobody's: call zero after it.
quiet() {
    local ns=$1 t0=$SECONDS lim=${BENCH_QUIET_TIMEOUT:-300} n
    k "$CTX" delete --raw "/apis/batch/v1/namespaces/$ns/jobs?propagationPolicy=Background" \
        >/dev/null 2>&1 || log "$MODE: deleting the jobs of $ns failed"
    until n=$(left "$ns" 2>/dev/null) && [ "$n" = 0 ]; do
        if [ $((SECONDS - t0)) -ge "$lim" ]; then
            log "$MODE: quiet $ns: timed out after $lim s with ${n:-?} Jobs and Workloads left, going on"
            return 0
        fi
        sleep 1
    done
    writes_settled $((lim - (SECONDS - t0))) "quiet $ns" || return 0
    log "$MODE: $ns empty and the manager quiet after $((SECONDS - t0)) s"
}

# writes_settled SECONDS WHAT: until the manager's writes (every client)
# grow by at most BENCH_QUIET_WRITES (5) in 5 s, SECONDS at most (then
# logged, status 1)
writes_settled() {
    local lim=$1 t0=$SECONDS a b
    a=$(manager_writes other)
    while sleep 5 && b=$(manager_writes other) && [ $((b - a)) -gt "${BENCH_QUIET_WRITES:-5}" ]; do
        if [ $((SECONDS - t0)) -ge "$lim" ]; then
            log "$MODE: $2: timed out after $lim s, the manager still writing ($((b - a)) in 5 s), going on"
            return 1
        fi
        a=$b
    done
}

rcb() { "$BENCH" --dir "$MKUEUE_E2E_DIR" --manager "$CTX" --workers "$W" "$@"; }

# The bed's own stall: every 5 minutes each API server rebuilds the OpenAPI
# spec of every CRD (its CRD informer's resync; the Ray and Kubeflow schemas
# are large), about 1 to 2.5 s each, logged as "slow openapi aggregation"
# when over 1 s. The bed's API servers start together, so the rebuilds
# coincide and take the 2 cores from every process for a few seconds: a
# run whose window holds one has its p99 from it. now_s: the clock as
# klog's (seconds of the day); bed_stall FROM TO: the seconds of those
# rebuilds that ended within [FROM, TO], every API server summed.
now_s() { date +%H:%M:%S.%N | awk -F: '{ printf "%.3f", $1 * 3600 + $2 * 60 + $3 }'; }
bed_stall() {
    cat "$MKUEUE_E2E_DIR"/logs/apiserver-*.log 2>/dev/null | awk -v from="$1" -v to="$2" '
        /slow openapi aggregation/ {
            split($2, a, ":"); t = a[1] * 3600 + a[2] * 60 + a[3]
            if (from <= to ? t < from || t > to : t < from && t > to) next # across midnight
            d = $NF; m = 0
            if (d ~ /m/) { split(d, b, "m"); m = b[1]; d = b[2] }
            sub(/s$/, "", d); sum += m * 60 + d
        }
        END { printf "%.1f", sum }'
}
# clear_of_stall SECONDS: waits (at most one period) until no live API
# server of the bed is due to rebuild within the next SECONDS, so a run of
# that length does not hold the stall (every manager and the floor are
# placed alike; bed_stall still records what a run held). The rebuilds
# come every 5 minutes from each API server's start: the next is predicted
# from its log's last burst of "slow openapi aggregation" (the burst's
# first line), else from the log's first line (its start).
STALL_PERIOD=300
clear_of_stall() {
    local need=$1 waited=0 wait
    while :; do
        wait=$(stall_wait "$need")
        [ "$wait" -gt 0 ] && [ "$waited" -lt "$STALL_PERIOD" ] || break
        log "$MODE: the bed's OpenAPI rebuild is due within the next $need s: waiting $wait s"
        sleep "$wait"
        waited=$((waited + wait))
    done
    STALL_WAITED=$((STALL_WAITED + waited))
}
STALL_WAITED=0
# run_s N RATE: about how long a run of N jobs at RATE/s takes (its tail:
# the last jobs' remote runs and their finish on the manager)
run_s() { awk -v n="$1" -v r="$2" 'BEGIN { printf "%d", n / r + 30 }'; }
# stall_wait SECONDS: the seconds to wait (0: none) before a run of SECONDS
stall_wait() {
    local now f logs=()
    now=$(now_s)
    for f in "$MKUEUE_E2E_DIR"/pids "$MKUEUE_E2E_DIR"/pids-*; do
        [ -f "$f" ] || continue
        while read -r pid name; do
            case $name in apiserver-*) kill -0 "$pid" 2>/dev/null && logs+=("$MKUEUE_E2E_DIR/logs/$name.log") ;; esac
        done <"$f"
    done
    [ ${#logs[@]} -gt 0 ] || { echo 0; return; }
    awk -v now="$now" -v need="$1" -v period="$STALL_PERIOD" '
        # seconds from now (klog: time of day; the day may have turned)
        function rel(ts,   a, d) {
            split(ts, a, ":"); d = a[1] * 3600 + a[2] * 60 + a[3] - now
            return d < -43200 ? d + 86400 : d > 43200 ? d - 86400 : d
        }
        # the next burst of the last file: under way until 30 s after its
        # start (on the bed: 3 s after the start, 14 s long), to be kept 20
        # s clear of the run
        function due(   b) {
            if (start == "") return
            b = first != "" ? first : start
            while (b < -30) b += period
            if (b < need + 20 && b + 30 > wait) wait = b + 30
        }
        FNR == 1 { due(); start = first = last = "" }
        start == "" && /^[IWEF][0-9][0-9][0-9][0-9] / { start = rel($2) }
        /slow openapi aggregation/ {
            t = rel($2)
            if (last == "" || t - last > 30) first = t # a new burst
            last = t
        }
        END { due(); print (wait > 0 ? int(wait) + 1 : 0) }
    ' "${logs[@]}"
}
# timed_rcb PREFIX STALL-KEY ARGS...: rcb's figures (keys prefixed PREFIX)
# and the bed's stall within its run (key STALL-KEY)
timed_rcb() {
    local pre=$1 key=$2 t0
    shift 2
    t0=$(now_s)
    rcb "$@" | sed "s/^/$pre/" >>"$KV/$MODE.kv"
    put "$key" "$(bed_stall "$t0" "$(now_s)")"
}
# timeline WHAT NS SINCE: with BENCH_TIMELINE=1, the steps of mkueue's
# dispatch of the jobs lat-K in NS since SINCE (UTC, as the log writes it)
timeline() {
    [ "$RC_LOG" = info ] && [ ${#OURS[@]} -gt 0 ] || return 0
    { echo "== $MODE, $1"; python3 "$HERE/timeline.py" "$MKUEUE_E2E_DIR/logs/bench-reconciler.log" \
        "$2/lat-" "$3"; queue_waits; } 2>&1 | tee -a "$OUT/timeline-$MODE-w$W.txt" >&2 || true
}
utc_now() { date -u +%Y-%m-%dT%H:%M:%S; }

# queue_snapshot: the reconciler's workqueue_*, client (rest_client_*) and step
# (mkueue_workload_step_*) histograms now, for queue_waits (with
# BENCH_TIMELINE=1 in mkueue's modes)
WAIT_SERIES='^(workqueue_(queue|work)|rest_client_(request|rate_limiter)|mkueue_workload_step)_duration_seconds_(sum|count)'
queue_snapshot() {
    [ "$RC_LOG" = info ] && [ ${#OURS[@]} -gt 0 ] || return 0
    curl -sf "http://127.0.0.1:$RC_PORT/metrics" | grep -E "$WAIT_SERIES" \
        >"$MKUEUE_E2E_DIR/queue-before.txt" || true
}
# queue_waits: since queue_snapshot, per kind of key: keys handed out, their
# mean wait for a thread and mean time on it; per API server (named by its
# kubeconfig): requests, their mean time to the answer and wait for the
# client's qps budget (waits.py)
queue_waits() {
    [ -f "$MKUEUE_E2E_DIR/queue-before.txt" ] || return 0
    local f names=()
    for f in "$MKUEUE_E2E_DIR"/kubeconfig/{manager,manager-kueue,worker-[0-9]*}.yaml; do
        [ -f "$f" ] && names+=("$(sed -n 's|^ *server: https://||p' "$f" | head -1)=$(basename "$f" .yaml)")
    done
    curl -sf "http://127.0.0.1:$RC_PORT/metrics" | grep -E "$WAIT_SERIES" \
        >"$MKUEUE_E2E_DIR/queue-after.txt" || true
    python3 "$HERE/waits.py" "$MKUEUE_E2E_DIR/queue-before.txt" \
        "$MKUEUE_E2E_DIR/queue-after.txt" "${names[@]}" || true
    rm -f "$MKUEUE_E2E_DIR/queue-before.txt" "$MKUEUE_E2E_DIR/queue-after.txt"
}

# latency NS RATE SUFFIX FLOOR: N jobs at RATE/s in NS (each run its own
# namespace: rc_bench names the jobs lat-K), keys m<SUFFIX>_*,
# writes_latency<SUFFIX>, events_latency<SUFFIX> and stage latency<SUFFIX>
# (so the throughput stage's CPU stays the throughput run's); FLOOR empty
# (the floor mode): then its floor, the same count and rate
latency() {
    local ns=$1 rate=$2 sfx=$3 w0 e0 ww0 c0 since
    clear_of_stall "$(run_s "$N" "$rate")"
    zero # (the wait's CPU is no run's)
    log "$MODE: latency, $N jobs at $rate/s"
    w0=$(manager_writes other) e0=$(manager_writes events) ww0=$(worker_writes) c0=$(conflicts)
    queue_snapshot
    since=$(utc_now)
    timed_rcb "m${sfx}_" "m${sfx}_bed_stall_s" --ns "$ns" --no-floor latency "$N" "$rate"
    timeline "$N jobs at $rate/s" "$ns" "$since"
    sleep 5 # the last jobs' trailing writes (finalizers, queue status)
    put "writes_latency$sfx" $(($(manager_writes other) - w0))
    put "events_latency$sfx" $(($(manager_writes events) - e0))
    put "worker_writes_latency$sfx" $(($(worker_writes) - ww0))
    put "conflicts_latency$sfx" $(($(conflicts) - c0))
    stage "latency$sfx"
    if [ -z "$4" ]; then
        clear_of_stall "$(run_s "$N" "$rate")"
        log "$MODE: the floor of the latency run at $rate/s"
        zero
        timed_rcb "m${sfx}_" "m${sfx}_floor_bed_stall_s" --ns "$ns" --floor-only latency "$N" "$rate"
        sleep 5 # as the run's stage
        stage "floor_latency$sfx" # the bed's CPU under the floor (ours: idle)
        zero # the floor's time is not the controllers'
    fi
}

# pairs: PAIRS runs of N jobs at RATE_PAIRS/s, each with a floor run next to
# it, the floor first in every second pair (keys m_pair<K>_*, the floors'
# stalls m_pair<K>_floor_bed_stall_s). The bed has slow windows of a few
# minutes (session 31: the same code 1.1 to 17x its floor, the API servers'
# etcd answering 10x slower in some runs): a pair's two runs share a window
# more often than runs minutes apart, and the median of the pairs' ratios
# (render.py) is the figure the goal is read from.
pairs() {
    local i
    for i in $(seq "$PAIRS"); do
        quiet bench-pair
        if [ $((i % 2)) = 1 ]; then
            pair_run "$i" --no-floor && pair_run "$i" --floor-only
        else
            pair_run "$i" --floor-only && pair_run "$i" --no-floor
        fi
        log "$MODE: pair $i: p99 $(kv_of "m_pair${i}_dispatch_apply_to_remote_job_p99_ms") ms," \
            "floor with admission $(kv_of "m_pair${i}_dispatch_floor_worker_admission_p99_ms") ms"
    done
}
# pair_run K FLAG: pair K's run of mkueue (--no-floor) or of its floor (--floor-only)
pair_run() {
    local what=mkueue stall=m_pair$1_bed_stall_s
    [ "$2" = --floor-only ] && what=floor stall=m_pair$1_floor_bed_stall_s
    # each run (its dispatches and then its finishes, or the floor's two
    # passes) clear of the bed's rebuilds: a pair parts by at most that wait
    clear_of_stall "$(run_s $((2 * N)) "$RATE_PAIRS")"
    log "$MODE: pair $1, $what: $N jobs at $RATE_PAIRS/s"
    local since
    [ "$what" = mkueue ] && queue_snapshot
    since=$(utc_now)
    timed_rcb "m_pair$1_" "$stall" --ns bench-pair "$2" latency "$N" "$RATE_PAIRS"
    # each pair's steps: its p99 and the floor's part in one window
    [ "$what" = mkueue ] && timeline "pair $1: $N jobs at $RATE_PAIRS/s" bench-pair "$since"
    sleep 5 # the last jobs' trailing writes, as latency
}
# kv_of KEY: KEY's value in this mode's figures so far (the last one written)
kv_of() { awk -v k="$1" '$1 == k { v = $2 } END { print v }' "$KV/$MODE.kv"; }

# dispatch_tracked T: with T Workloads tracked, N_TRACKED jobs at
# RATE_TRACKED/s in namespace bench (empty: quiet ran before the level),
# keys m_tracked_<T>_* and stage dispatch_tracked_<T>: the CPU per
# dispatched job with T tracked, beside the paced run's (latency_low, about
# none tracked); in the floor mode, the floor with T tracked after it
dispatch_tracked() {
    quiet bench # the tracked jobs' creation done (bench is empty already)
    clear_of_stall "$(run_s "$N_TRACKED" "$RATE_TRACKED")"
    zero
    log "$MODE: $N_TRACKED jobs at $RATE_TRACKED/s with $1 tracked"
    local since
    queue_snapshot
    since=$(utc_now)
    timed_rcb "m_tracked_$1_" "m_tracked_$1_bed_stall_s" --ns bench --no-floor latency "$N_TRACKED" "$RATE_TRACKED"
    timeline "$N_TRACKED jobs at $RATE_TRACKED/s with $1 tracked" bench "$since"
    sleep 5 # as latency: the last jobs' trailing writes
    stage "dispatch_tracked_$1"
    if [ "$MODE" = "$FLOOR_MODE" ]; then
        # the floor with the same Workloads on the manager: what the API
        # server's own slowing with T objects costs any manager
        clear_of_stall "$(run_s "$N_TRACKED" "$RATE_TRACKED")"
        log "$MODE: the floor with $1 tracked"
        timed_rcb "m_tracked_$1_" "m_tracked_$1_floor_bed_stall_s" --ns bench --floor-only latency "$N_TRACKED" "$RATE_TRACKED"
        zero # the floor's time is not the controllers'
    fi
}

run_mode() {
    MODE=$1 STALL_WAITED=0
    OURS=() KUEUE=()
    rm -f "$OUT/timeline-$MODE-w$W.txt"
    local secret_ns=mkueue-system kpid
    log "== $MODE: fresh manager"
    case $MODE in
    mkueue-standalone) CTX=manager ;;
    mkueue-with-kueue | kueue)
        CTX=manager-kueue
        "$TB" down-cluster manager-kueue
        MKUEUE_MANAGER_KUEUE_MULTIKUEUE=$([ "$MODE" = kueue ] && echo 1 || echo 0) "$TB" up-cluster manager-kueue
        eval "$("$TB" env)"
        kpid=$(awk '$2 == "kueue-manager-kueue" { print $1 }' "$MKUEUE_E2E_DIR/pids-manager-kueue")
        KUEUE=("$kpid")
        ;;
    *) log "unknown mode $MODE"; return 2 ;;
    esac
    [ "$MODE" = kueue ] && secret_ns=kueue-system
    clean_workers
    manager "$CTX" "$secret_ns"
    case $MODE in
    mkueue-standalone | mkueue-with-kueue)
        local rcmode=standalone
        [ "$MODE" = mkueue-with-kueue ] && rcmode=with-kueue
        webhook "$CTX"
        reconciler "$CTX" "$rcmode"
        OURS=("$(pid_of reconciler)" "$(pid_of webhook)")
        ;;
    kueue)
        local w
        for w in "${WORKERS[@]}"; do
            wait_until 120 "MultiKueueCluster $w Active" active multikueuecluster "$w"
        done
        wait_until 60 "AdmissionCheck Active" active admissioncheck multikueue-ac
        ;;
    esac
    # jobs through the chain at the run's pace, not measured: the floors run
    # after a mode's first run, so without this only the manager meets a
    # fresh manager's first load (session 31: not shown to help, the bed's
    # noise is larger; it only takes the order's bias away)
    log "$MODE: warm-up, $WARM jobs at $RATE/s"
    rcb --ns bench-warm --no-floor latency "$WARM" "$RATE" >/dev/null
    quiet bench-warm
    : >"$KV/$MODE.kv"
    put workers "$W"
    put rate "$RATE"
    if [ -n "$RATE_LOW" ]; then put rate_low "$RATE_LOW"; fi
    put running "$RUNNING"
    if [ -n "$TRACKED" ] && [ "$N_TRACKED" -gt 0 ]; then put rate_tracked "$RATE_TRACKED"; fi
    if [ "$MODE" = "$FLOOR_MODE" ] && [ "$PAIRS" -gt 0 ]; then put rate_pairs "$RATE_PAIRS"; fi
    put settle "${BENCH_SETTLE:-35}"
    put load1 "$(cut -d' ' -f1 /proc/loadavg)"
    zero
    settle
    stage idle
    local floor=--no-floor
    [ "$MODE" = "$FLOOR_MODE" ] && floor=
    latency bench "$RATE" "" "$floor"
    if [ -n "$RATE_LOW" ]; then
        # the first run's jobs gone and its trailing writes done (at 10/s
        # they queue behind the client's rate limit), else the paced run
        # carries the first run's tail; its CPU is neither run's
        quiet bench
        zero
        latency bench-low "$RATE_LOW" _low "$floor"
    fi
    if [ "$MODE" = "$FLOOR_MODE" ] && [ "$PAIRS" -gt 0 ]; then
        # the latency runs' jobs gone (bench's too: without BENCH_RATE_LOW
        # its run is the last, and the first pair met its cleanup)
        quiet bench
        quiet bench-low
        pairs
        quiet bench-pair
        zero # the pairs' CPU is no stage's
    fi
    clear_of_stall "$(run_s "$M" 5)"
    zero
    log "$MODE: throughput, $M jobs at once"
    rcb --ns bench $floor throughput "$M" "$THREADS" | sed 's/^/m_/' >>"$KV/$MODE.kv"
    stage throughput
    if [ "$RUNNING" -gt 0 ]; then
        log "$MODE: $RUNNING jobs running"
        rcb --ns bench-run --running create "$RUNNING" run >/dev/null
        # a manager that does not get there in time is measured as it is,
        # with what it reached (the table shows the count)
        wait_until 900 "$RUNNING remote jobs" at_least "$RUNNING" remote_jobs bench-run || true
        put running_reached "$(remote_jobs bench-run)"
        settle
        stage running
    fi
    local t have w0
    for t in $TRACKED; do
        # namespace bench emptied: the throughput run's jobs (first level) or
        # the last level's dispatched jobs are not counted as tracked (the
        # count is of every namespace) and their deletion is in no stage
        quiet bench
        zero
        have=$(workloads)
        log "$MODE: $t tracked Workloads (have $have)"
        w0=$(manager_writes other)
        [ "$have" -lt "$t" ] && rcb --ns bench-idle --queue idle create $((t - have)) "idle$t" >/dev/null
        wait_until 1800 "$t Workloads" at_least "$t" workloads || true
        # and written: each queued Workload's status costs the manager
        # writes at the client's 50/s, long after it exists; that is part
        # of its cost (the stage's CPU) and would otherwise be the queue the
        # dispatch below waits behind
        writes_settled $((300 + t / 15)) "$t Workloads written" || true
        settle
        stage "tracked_$t"
        put "tracked_$t" "$(workloads)"
        put "writes_tracked_$t" $(($(manager_writes other) - w0))
        put "new_tracked_$t" $((t > have ? t - have : 0))
        if [ "$N_TRACKED" -gt 0 ]; then dispatch_tracked "$t"; fi
    done
    # the reconciler restarted on what it tracks: its memory without the
    # slack the stages before left (freed blocks the allocator keeps)
    if [ -n "$TRACKED" ] && [ ${#OURS[@]} -gt 0 ]; then
        quiet bench # the last level's dispatched jobs: restarted on the tracked ones
        log "$MODE: the reconciler restarted on $(workloads) Workloads"
        stop_one reconciler
        reconciler "$CTX" "$rcmode"
        OURS[0]=$(pid_of reconciler)
        zero
        settle
        stage restarted
    fi
    put stall_waited_s "$STALL_WAITED"
    stop_ours
    log "$MODE: done"
}

mkdir -p "$OUT" "$KV"
# a mode's figures replace its earlier ones; modes not run keep theirs
for mode in $MODES; do rm -f "$KV/$mode.kv"; done
more_nodes
# the floor on the bed's manager (no Kueue webhooks there), in mode mkueue-standalone only
FLOOR_MODE=mkueue-standalone
T0=$SECONDS
for mode in $MODES; do run_mode "$mode"; done
[ "$CTX" = manager-kueue ] && "$TB" down-cluster manager-kueue
log "all modes in $(((SECONDS - T0) / 60)) min $(((SECONDS - T0) % 60)) s"
python3 "$HERE/render.py" collect "$OUT/managers-w$W.json" "$KV" "$FLOOR_MODE"
python3 "$HERE/render.py" table "$OUT"
