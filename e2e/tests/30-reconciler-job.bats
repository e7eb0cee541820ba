#!/usr/bin/env bats
# mkueue-reconciler with batch/v1 Jobs (standalone mode): dispatch to exactly
# one worker, status back while running and at the end, cleanup on
# completion and on deletion, and a foreign same-named Job left alone.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 0))

setup_file() {
    rc_bed_setup
    rc_start rc-job "$PORT" --leader-elect=false --gc-interval 5s
}

teardown_file() {
    stop_component rc-job
}

setup() {
    NS=$(fresh_ns rcjob)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

@test "a Job is dispatched to exactly one worker and the loser's copy is removed" {
    rc_job "$NS" work
    eventually 20 is_ready "$NS" work
    c=$(rc_cluster_of "$NS" work)
    [[ "$c" == worker-[12] ]]
    [ "$(rc_wl "$NS" work '{.status.admissionChecks[0].message}')" = "The workload got reservation on \"$c\"" ]
    [ "$(rc_cond "$NS" work QuotaReserved)" = True ]
    [ "$(rc_cond "$NS" work Admitted)" = True ]
    # the remote job exists on the winner only; the other worker keeps nothing
    [ "$(rc_remote_jobs "$c" "$NS")" = job.batch/work ]
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    eventually 10 is_eq "" rc_remote_wls "$other" "$NS"
    [ -z "$(rc_remote_jobs "$other" "$NS")" ]
    # the remote copy: our origin, the prebuilt Workload, no TTL, no managedBy
    wl=$(rc_wl_name "$NS" work)
    [ "$(jp "$c" -n "$NS" job work -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')" = "$wl" ]
    [ -z "$(jp "$c" -n "$NS" job work -o jsonpath='{.spec.ttlSecondsAfterFinished}')" ]
    # Kueue's metrics
    [ -n "$(rc_metric "$PORT" "multikueue_workloads_admitted_total{cluster_queue=\"team-a-cq\",cluster=\"$c\",replica_role=\"standalone\"}")" ]
    # client-go's count of manager requests: the Workload's create among them
    host=$(sed -n 's|^ *server: https://||p' "$MKUEUE_E2E_DIR/kubeconfig/manager.yaml" | head -1)
    created=$(rc_metric "$PORT" "rest_client_requests_total{code=\"201\",host=\"$host\",method=\"POST\"}")
    [ "${created:-0}" -ge 1 ]
    # and client-go's histogram of their waits for the qps budget, per verb
    waits=$(rc_metric "$PORT" "rest_client_rate_limiter_duration_seconds_count{verb=\"POST\",host=\"$host\"}")
    [ "${waits:-0}" -ge "$created" ]
    # every request's time to its answer, per server: the winner's copies
    # and job were created there (its host, from the kubeconfig of its Secret)
    whost=$(sed -n 's|^ *server: https://||p' "$MKUEUE_E2E_DIR/kubeconfig/$c.yaml" | head -1)
    timed=$(rc_metric "$PORT" "rest_client_request_duration_seconds_count{verb=\"POST\",host=\"$whost\"}")
    [ "${timed:-0}" -ge 2 ]
    [ -n "$(rc_metric "$PORT" "rest_client_requests_total{code=\"201\",host=\"$whost\",method=\"POST\"}")" ]
    # client-go's workqueue metrics by kind of key: the Workload's and the
    # job's keys went through their queues and were processed
    for q in workload job; do
        adds=$(rc_metric "$PORT" "workqueue_adds_total{name=\"$q\",controller=\"$q\"}")
        [ "${adds:-0}" -ge 1 ]
        waited=$(rc_metric "$PORT" "workqueue_queue_duration_seconds_count{name=\"$q\",controller=\"$q\"}")
        worked=$(rc_metric "$PORT" "workqueue_work_duration_seconds_count{name=\"$q\",controller=\"$q\"}")
        [ "${waited:-0}" -ge 1 ]
        [ "${worked:-0}" -ge 1 ]
    done
    [ -n "$(rc_metric "$PORT" "workqueue_longest_running_processor_seconds{name=\"quota\",controller=\"quota\"}")" ]
}

@test "a burst goes to the worker that reserves first, whichever it is, never to two" {
    # Which worker wins a race on a real bed depends on the machine's load
    # (a loaded one straddles seconds and decides on the first reservation it
    # sees), so the race is made certain: one worker's LocalQueue holds, the
    # other's Kueue reserves first. Ties within a second (spread by the
    # Workload's UID) are test_rc_decide's: a bed cannot make them certain.
    local i n=10
    burst() { # burst PREFIX HELD: n Jobs while HELD's LocalQueue holds
        local other=worker-1
        [ "$2" = worker-1 ] && other=worker-2
        k "$2" -n "$NS" patch localqueue team-a --type=merge -p '{"spec":{"stopPolicy":"Hold"}}' >/dev/null
        k "$other" -n "$NS" patch localqueue team-a --type=merge -p '{"spec":{"stopPolicy":"None"}}' >/dev/null
        for i in $(seq 1 $n); do rc_job "$NS" "$1-$i" 10m & done
        wait
        eventually 60 is_eq $n placed_on "$1" "$other"
        [ "$(placed_on "$1" "$2")" = 0 ]
    }
    # placed_on PREFIX CLUSTER: how many of PREFIX's Workloads went to CLUSTER
    placed_on() {
        km -n "$NS" get workloads -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].name} {.status.clusterName}{"\n"}{end}' |
            grep -c "^$1-[0-9]* $2\$" || true
    }
    burst first worker-1 # worker-1 is first in the config: it does not win
    burst second worker-2
    # clusterName is written before the remote job is created (never two jobs)
    eventually 30 is_eq $((2 * n)) rc_count_remote_jobs "$NS"
}

@test "job status is synced while running and at the end; completion removes remote objects" {
    # a TTL longer than the scenario: the finished Workload must still be
    # there to be read (with 5 s the job and then its Workload could be gone
    # before a loaded machine looked)
    RC_TTL=300 rc_job "$NS" run
    eventually 20 is_ready "$NS" run
    c=$(rc_cluster_of "$NS" run)
    eventually 20 is_eq 1 jp manager -n "$NS" job run -o jsonpath='{.status.active}'
    # the pod runs on the worker (KWOK), and nothing runs on the manager
    eventually 20 is_eq Running jp "$c" -n "$NS" pods -l job-name=run -o jsonpath='{.items[0].status.phase}'
    [ "$(jp manager -n "$NS" job run -o jsonpath='{.spec.managedBy}')" = kueue.x-k8s.io/multikueue ]
    [ "$(count_of manager pods -n "$NS")" = 0 ]
    rc_finish_pod "$c" "$NS" run
    eventually 20 is_eq 1 jp manager -n "$NS" job run -o jsonpath='{.status.succeeded}'
    eventually 10 is_eq True jp manager -n "$NS" job run -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}'
    eventually 20 is_eq True rc_cond "$NS" run Finished
    [ "$(rc_wl "$NS" run '{.status.conditions[?(@.type=="Finished")].reason}')" = Succeeded ]
    eventually 20 no_remote_objects "$NS"
    eventually 20 is_eq "" k "$c" -n "$NS" get pods -o name
    # the finished Workload (still there) no longer holds our finalizer
    eventually 20 is_eq "" rc_wl "$NS" run '{.metadata.finalizers}'
    [ -n "$(rc_wl_name "$NS" run)" ]
}

@test "deleting the manager job removes the remote job and its pods" {
    rc_job "$NS" gone
    eventually 20 is_ready "$NS" gone
    c=$(rc_cluster_of "$NS" gone)
    eventually 20 has_pods "$c" "$NS" job-name=gone
    km -n "$NS" delete job gone >/dev/null
    eventually 20 no_remote_objects "$NS"
    eventually 20 is_eq "" k "$c" -n "$NS" get pods -o name
    eventually 20 is_eq "" km -n "$NS" get workloads -o name
}

@test "a foreign Job of the same name on a worker is never touched" {
    kw1 -n "$NS" create job same --image=busybox -- true >/dev/null
    uid=$(jp worker-1 -n "$NS" job same -o jsonpath='{.metadata.uid}')
    rc_job "$NS" same
    # whichever worker wins, there is never more than one job of ours
    for _ in $(seq 15); do
        [ "$(rc_count_remote_jobs "$NS")" -le 1 ]
        sleep 0.4
    done
    km -n "$NS" delete job same >/dev/null
    eventually 20 no_remote_objects "$NS"
    sleep 2
    [ "$(jp worker-1 -n "$NS" job same -o jsonpath='{.metadata.uid}')" = "$uid" ]
    [ -z "$(jp worker-1 -n "$NS" job same -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/multikueue-origin}')" ]
}

@test "the quota gate reserves in order and tells a waiting Workload why" {
    rc_job "$NS" first 12
    eventually 20 is_eq True rc_cond "$NS" first QuotaReserved
    rc_job "$NS" second 8
    eventually 20 is_eq WaitingForQuota rc_wl "$NS" second '{.status.conditions[?(@.type=="QuotaReserved")].reason}'
    msg=$(rc_wl "$NS" second '{.status.conditions[?(@.type=="QuotaReserved")].message}')
    [[ "$msg" == "Waiting for quota: ClusterQueue team-a-cq: "*" of 16 cpu in use, the workload requests 8" ]]
    # the gate's first write also lists the queue's check, Pending (no separate initial status)
    [ "$(rc_wl "$NS" second '{.status.admissionChecks[0].state}')" = Pending ]
    rc_job "$NS" huge 40
    eventually 20 is_eq ExceedsMaxQuota rc_wl "$NS" huge '{.status.conditions[?(@.type=="QuotaReserved")].reason}'
    # nothing is dispatched without quota
    [ -z "$(k worker-1 -n "$NS" get workload "$(rc_wl_name "$NS" second)" -o name 2>/dev/null)" ]
    km -n "$NS" delete job first >/dev/null
    eventually 20 is_eq True rc_cond "$NS" second QuotaReserved
}

@test "the reconciler names its allocator and its thread caches at start, and its heap metric reads it" {
    # jemalloc when linked (reconciler/heap.h); the ASan build keeps glibc's
    want=glibc
    ldd "$RC_BIN" | grep -q libjemalloc && want=jemalloc
    start=$(grep '"msg":"starting","logger":"main"' "$MKUEUE_E2E_DIR/logs/rc-job.log" | tail -1)
    grep -q "\"allocator\":\"$want\"" <<<"$start"
    [ "$want" = glibc ] && return 0 # ASan's malloc is neither: no figure to read
    # jemalloc read heap.c's malloc_conf: thread caches on the reconcile workers only
    grep -q '"thread_caches":"workers"' <<<"$start"
    heap=$(curl -sf "http://127.0.0.1:$PORT/metrics" | awk '/^mkueue_heap_inuse_bytes / { print $2 }')
    # the informers' caches alone are well over a MiB
    awk -v h="$heap" 'BEGIN { exit !(h > 1048576) }'
}
