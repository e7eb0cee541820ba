#!/usr/bin/env bats
# One worker that accepts connections and never answers stalls nobody
# else (reconciler/README.md "One hung worker"): worker-1's API server sits
# behind e2e/scripts/lease-proxy.py, which from SIGUSR1 on holds every new
# request. worker-1 is the first cluster by name, so its part of each plan
# comes first: the other worker's part runs past it (per-cluster carry-on),
# and at most threads - 1 reconcile threads wait on it (the in-flight
# limit), so jobs keep going to worker-2 and finish. The worker timeout is
# longer than the scenario: the held calls never end while it runs.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 7))
PP=$((RC_METRICS_BASE + 41)) # the proxy in front of worker-1
HUNG=worker-1
FLAGS=(--leader-elect=false --gc-interval 5s --workers 4 --worker-timeout 10m)

setup_file() {
    rc_bed_setup
    rc_proxy hang-proxy "$HUNG" "$PP" --hold .
    rc_secret "$HUNG" "$PROXY_KC"
    rc_start rc-hung "$PORT" "${FLAGS[@]}"
}

teardown_file() {
    # the proxy first: its held connections close, so the reconciler's
    # calls end and it stops at once
    stop_component hang-proxy
    stop_component rc-hung
    rc_secret "$HUNG" "$MKUEUE_E2E_DIR/kubeconfig/$HUNG.yaml"
}

setup() {
    NS=$(fresh_ns rchung)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

# copies created on the hung worker that it holds (never answered)
held() { jq -s 'map(select(.action == "held" and .method == "POST")) | length' "$PROXY_LOG"; }
at_least() { [ "$("${@:2}")" -ge "$1" ]; }
job_complete() {
    is_eq True jp manager -n "$NS" job "$1" -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}'
}

@test "a worker that never answers: jobs keep going to the other worker and finish" {
    eventually 30 is_eq True mkc_active "$HUNG"
    eventually 30 is_eq True mkc_active worker-2
    kill -USR1 "$(cat "$MKUEUE_E2E_DIR/run/hang-proxy.pid")"
    # jobs whose copies for the hung worker are held: as many reconcile
    # threads as the old code would let them take
    local j
    for j in 1 2 3 4; do rc_job "$NS" "held$j"; done
    eventually 60 at_least 3 held
    # new jobs: dispatched to worker-2, run there, their status copied back
    # (each ended in turn: a Complete manager Job goes after its 5 s TTL)
    for j in 1 2 3 4 5; do rc_job "$NS" "run$j"; done
    for j in 1 2 3 4 5; do
        eventually 60 is_ready "$NS" "run$j"
        eq worker-2 "$(rc_cluster_of "$NS" "run$j")"
        rc_finish_pod worker-2 "$NS" "run$j"
        eventually 30 job_complete "run$j"
    done
    # the hung worker's calls are still held: nothing was answered meanwhile
    eq "" "$(rc_remote_wls "$HUNG" "$NS")"
    # and the threads they hold show as stuck work, as client-go reports it:
    # a Workload's reconcile running for seconds (9 s here; one takes
    # milliseconds), and several of them (3 here: the sum is 3 times it)
    local wl='{name="workload",controller="workload"}' longest unfinished
    longest=$(rc_metric "$PORT" "workqueue_longest_running_processor_seconds$wl")
    unfinished=$(rc_metric "$PORT" "workqueue_unfinished_work_seconds$wl")
    awk -v l="${longest:-0}" -v u="${unfinished:-0}" 'BEGIN { exit !(l >= 2 && u >= 2 * l) }'
}
