#!/usr/bin/env bash
# Benchmark of mkueue-reconciler on the three local clusters (issue 5):
#   - apply -> remote job exists, and remote completion -> manager status,
#     p50/p99 over BENCH_N jobs applied at BENCH_RATE/s;
#   - dispatch throughput (jobs/s) for BENCH_M jobs from BENCH_THREADS threads;
#   each beside a floor measured in the same run: the same API calls made
#   directly by the bench tool (see e2e/bench/rc_bench.c);
#   - reconciler RSS with about 1,000 and BENCH_TRACKED (10,000) tracked jobs
#     (the extra ones wait for quota in a ClusterQueue without any), in the
#     steady state (queue drained, after a malloc_trim), with malloc's own
#     count (heap in use) and the peak RSS beside it.
# Uses its own state folder and ports unless MKUEUE_E2E_DIR etc. are set;
# brings the bed up and down (BENCH_KEEP_BED=1 keeps it).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export MKUEUE_E2E_DIR=${MKUEUE_E2E_DIR:-/tmp/mkueue-bench-rc}
export MKUEUE_ETCD_PORT=${MKUEUE_ETCD_PORT:-24400}
export MKUEUE_MANAGER_PORT=${MKUEUE_MANAGER_PORT:-17400}
export MKUEUE_WORKER1_PORT=${MKUEUE_WORKER1_PORT:-17401}
export MKUEUE_WORKER2_PORT=${MKUEUE_WORKER2_PORT:-17402}
N=${BENCH_N:-200} RATE=${BENCH_RATE:-10} M=${BENCH_M:-1000} THREADS=${BENCH_THREADS:-8}
TRACKED=${BENCH_TRACKED:-10000}
MPORT=${BENCH_METRICS_PORT:-18399}
BENCH=$ROOT/build/rc_bench
RC=$ROOT/bin/mkueue-reconciler
log() { echo "bench-reconciler: $*" >&2; }

rcpid=""
cleanup() {
    [ -n "$rcpid" ] && kill "$rcpid" 2>/dev/null && wait "$rcpid" 2>/dev/null
    [ "${BENCH_KEEP_BED:-0}" = 1 ] || "$ROOT/e2e/testbed.sh" down >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$ROOT/e2e/testbed.sh" up
eval "$("$ROOT/e2e/testbed.sh" env)"
km() { kubectl --context manager "$@"; }
for c in worker-1 worker-2; do kubectl --context $c apply -f "$ROOT/e2e/manifests/worker.yaml" >/dev/null; done
km apply -f "$ROOT/e2e/manifests/manager.yaml" >/dev/null
for i in 1 2; do
    km -n mkueue-system create secret generic worker-$i-kubeconfig \
        --from-file=kubeconfig="$MKUEUE_E2E_DIR/kubeconfig/worker-$i.yaml" --dry-run=client -o yaml |
        km apply -f - >/dev/null
done
for c in manager worker-1 worker-2; do
    for ns in bench bench-idle; do
        kubectl --context $c create ns $ns --dry-run=client -o yaml | kubectl --context $c apply -f - >/dev/null
        kubectl --context $c apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $ns, name: team-a}
spec: {clusterQueue: team-a-cq}
YAML
    done
done
# tracked-but-waiting jobs: a MultiKueue ClusterQueue with no quota
km apply -f - >/dev/null <<YAML
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

"$RC" --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/manager.yaml" --leader-elect=false \
    --metrics-addr "127.0.0.1:$MPORT" --log-level warn --workers 4 --qps 400 --burst 800 \
    --worker-qps 400 --worker-burst 800 >"$MKUEUE_E2E_DIR/logs/bench-reconciler.log" 2>&1 &
rcpid=$!
for _ in $(seq 100); do curl -sf "127.0.0.1:$MPORT/readyz" >/dev/null && break; sleep 0.2; done
sleep 1

rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$rcpid/status"; }
peak() { awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$rcpid/status"; }
depth() { curl -sf "127.0.0.1:$MPORT/metrics" | awk '/^mkueue_workqueue_depth / { print $2 }'; }
# steady state: the queue drained, then one periodic malloc_trim (every 30 s)
settle() {
    for _ in $(seq 300); do [ "$(depth)" = 0 ] && break; sleep 1; done
    sleep 32
}
tracked() { curl -sf "127.0.0.1:$MPORT/metrics" | awk '/^mkueue_tracked_workloads / { print $2 }'; }
heap() { curl -sf "127.0.0.1:$MPORT/metrics" | awk '/^mkueue_heap_inuse_bytes / { printf "%.1f", $2 / 1048576 }'; }

echo "# mkueue-reconciler benchmark ($(nproc) cores; N=$N at $RATE/s, M=$M with $THREADS threads)"
echo "rss_idle_mib $(rss)"
log "latency: $N jobs at $RATE/s"
"$BENCH" --dir "$MKUEUE_E2E_DIR" --ns bench latency "$N" "$RATE"
log "throughput: $M jobs"
"$BENCH" --dir "$MKUEUE_E2E_DIR" --ns bench throughput "$M" "$THREADS"
settle
echo "tracked_workloads $(tracked)"
echo "rss_mib_at_about_1000_tracked $(rss)"
echo "heap_inuse_mib_at_about_1000_tracked $(heap)"
extra=$((TRACKED - $(tracked)))
if [ "$extra" -gt 0 ]; then
    log "creating $extra more jobs that wait for quota"
    "$BENCH" --dir "$MKUEUE_E2E_DIR" --ns bench-idle --queue idle create "$extra" idle >/dev/null
    for _ in $(seq 900); do
        [ "$(tracked)" -ge "$TRACKED" ] && break
        sleep 1
    done
    settle
fi
echo "tracked_workloads $(tracked)"
echo "rss_mib_at_${TRACKED}_tracked $(rss)"
echo "heap_inuse_mib_at_${TRACKED}_tracked $(heap)"
echo "rss_peak_mib $(peak)"
