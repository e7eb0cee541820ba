#!/usr/bin/env bats
# mkueue-reconciler under faults: a worker unreachable at submission, a
# worker lost for less and for more than workerLostTimeout (its apiserver
# frozen with SIGSTOP: alive but silent, like a network partition), a
# rotated kubeconfig Secret, and the reconciler killed with SIGKILL at random
# points of the dispatch.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 1))
LOST=30 # --worker-lost-timeout, seconds (room for a loaded 2-core machine)
FLAGS=(--leader-elect=false --gc-interval 5s --worker-lost-timeout ${LOST}s
       --probe-interval 1s --worker-timeout 2s)

setup_file() {
    rc_bed_setup
    rc_start rc-faults "$PORT" "${FLAGS[@]}"
}

teardown_file() {
    local c
    for c in worker-1 worker-2; do kill -CONT "$(bed_pid apiserver-$c)" 2>/dev/null || true; done
    rc_secret worker-1 "$MKUEUE_E2E_DIR/kubeconfig/worker-1.yaml"
    rc_secret worker-2 "$MKUEUE_E2E_DIR/kubeconfig/worker-2.yaml"
    stop_component rc-faults
}

setup() {
    NS=$(fresh_ns rcfault)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    local c
    for c in worker-1 worker-2; do kill -CONT "$(bed_pid apiserver-$c)" 2>/dev/null || true; done
    rc_ns_delete "$NS"
}


@test "a worker unreachable at submission: the other one gets the job" {
    # worker-2's Secret now points at a closed port
    rc_secret_dead worker-2
    eventually 20 is_eq False mkc_active worker-2
    [ "$(jp manager ac multikueue-ac -o jsonpath='{.status.conditions[0].reason}')" = SomeActiveClusters ]
    rc_job "$NS" lone
    eventually 20 is_ready "$NS" lone
    [ "$(rc_cluster_of "$NS" lone)" = worker-1 ]
    [ "$(rc_remote_jobs worker-1 "$NS")" = job.batch/lone ]
    rc_secret worker-2 "$MKUEUE_E2E_DIR/kubeconfig/worker-2.yaml"
    eventually 20 is_eq True mkc_active worker-2
    sleep 1
    [ -z "$(rc_remote_wls worker-2 "$NS")" ]
}

@test "a worker lost for less than workerLostTimeout: nothing happens" {
    rc_job "$NS" brief
    eventually 20 is_ready "$NS" brief
    c=$(rc_cluster_of "$NS" brief)
    pid=$(bed_pid "apiserver-$c")
    kill -STOP "$pid"
    eventually 15 is_eq False mkc_active "$c" # noticed as lost...
    local end=$((SECONDS + 8))                # (a window well inside LOST, however slow kubectl is)
    while [ $SECONDS -lt $end ]; do           # ...yet the job stays where it is
        [ "$(rc_check_state "$NS" brief)" = Ready ]
        [ "$(rc_cluster_of "$NS" brief)" = "$c" ]
        sleep 0.5
    done
    kill -CONT "$pid"
    eventually 20 is_eq True mkc_active "$c"
    sleep 2
    [ "$(rc_check_state "$NS" brief)" = Ready ]
    [ "$(rc_cluster_of "$NS" brief)" = "$c" ]
    [ "$(rc_count_remote_jobs "$NS")" = 1 ]
    [ "$(rc_wl "$NS" brief '{.status.admissionChecks[0].retryCount}')" = "" ]
}

@test "a worker lost for longer: dispatched again exactly once, the stale copy goes on return" {
    rc_job "$NS" moved
    eventually 20 is_ready "$NS" moved
    c=$(rc_cluster_of "$NS" moved)
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    pid=$(bed_pid "apiserver-$c")
    start=$SECONDS
    kill -STOP "$pid"
    eventually $((LOST + 25)) is_eq "$other" rc_cluster_of "$NS" moved
    [ $((SECONDS - start)) -ge $((LOST - 2)) ] # not before the timeout
    eventually 20 is_ready "$NS" moved
    [ "$(rc_remote_jobs "$other" "$NS")" = job.batch/moved ]
    [ "$(rc_wl "$NS" moved '{.status.admissionChecks[0].retryCount}')" = 1 ]
    kill -CONT "$pid"
    # the stale copy (Workload and job) on the returning worker is deleted
    eventually 30 is_eq "" rc_remote_jobs "$c" "$NS"
    eventually 10 is_eq "" rc_remote_wls "$c" "$NS"
    sleep 3
    [ "$(rc_cluster_of "$NS" moved)" = "$other" ]
    [ "$(rc_count_remote_jobs "$NS")" = 1 ]
    [ "$(rc_wl "$NS" moved '{.status.admissionChecks[0].retryCount}')" = 1 ]
}

@test "a rotated kubeconfig Secret takes effect without a restart" {
    d="$BATS_TEST_TMPDIR/pki"
    mkdir -p "$d"
    cp "$MKUEUE_E2E_DIR/pki/worker-1/ca.crt" "$MKUEUE_E2E_DIR/pki/worker-1/ca.key" "$d/"
    "$MKUEUE_ROOT/certs/gen.sh" client "$d" rotated ca mkueue-rotated system:masters >/dev/null 2>&1
    sed -e "s#client-certificate-data: .*#client-certificate-data: $(base64 -w0 <"$d/rotated.crt")#" \
        -e "s#client-key-data: .*#client-key-data: $(base64 -w0 <"$d/rotated.key")#" \
        "$MKUEUE_E2E_DIR/kubeconfig/worker-1.yaml" >"$d/kubeconfig.yaml"
    ! cmp -s "$d/kubeconfig.yaml" "$MKUEUE_E2E_DIR/kubeconfig/worker-1.yaml" || false
    rc_secret worker-1 "$d/kubeconfig.yaml"
    eventually 20 grep -q '"kubeconfig changed, reconnecting","logger":"clusters","cluster":"worker-1"' \
        "$MKUEUE_E2E_DIR/logs/rc-faults.log"
    eventually 20 is_eq True mkc_active worker-1
    # a job still goes through worker-1 (worker-2 made unusable meanwhile)
    rc_secret_dead worker-2
    eventually 20 is_eq False mkc_active worker-2
    rc_job "$NS" rotated
    eventually 20 is_ready "$NS" rotated
    [ "$(rc_cluster_of "$NS" rotated)" = worker-1 ]
    rc_secret worker-2 "$MKUEUE_E2E_DIR/kubeconfig/worker-2.yaml"
    rc_secret worker-1 "$MKUEUE_E2E_DIR/kubeconfig/worker-1.yaml"
    eventually 20 is_eq True mkc_active worker-2
}

# at most one remote job per manager job, at every look
no_double() {
    local n
    n=$({ rc_remote_jobs worker-1 "$NS"; rc_remote_jobs worker-2 "$NS"; } | sort | uniq -d)
    [ -z "$n" ]
}

@test "the reconciler killed with SIGKILL at random points of the dispatch, 20 times: never two remote jobs" {
    for i in $(seq 20); do
        rc_job "$NS" "k$i-a"
        rc_job "$NS" "k$i-b"
        sleep "0.$((RANDOM % 30))"
        stop_component rc-faults KILL
        no_double
        rc_start rc-faults "$PORT" "${FLAGS[@]}"
        no_double
    done
    all_ready() {
        local j
        for j in $(km -n "$NS" get jobs -o jsonpath='{.items[*].metadata.name}'); do
            is_ready "$NS" "$j" || return 1
        done
    }
    eventually 60 all_ready
    sleep 2
    no_double
    [ "$(rc_count_remote_jobs "$NS")" = 40 ]
    # each job runs where its Workload says, and nowhere else
    for j in $(km -n "$NS" get jobs -o jsonpath='{.items[*].metadata.name}'); do
        [ -n "$(jp "$(rc_cluster_of "$NS" "$j")" -n "$NS" job "$j" -o name)" ]
    done
}
