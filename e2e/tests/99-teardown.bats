#!/usr/bin/env bats
# `testbed.sh down` leaves no process and no listening port behind.
# Uses a second, private bed on other ports so the main one keeps running.

load helpers

setup() {
    # the main bed's ports plus 100, so parallel beds on other ports don't collide
    export MKUEUE_E2E_DIR=$BATS_TEST_TMPDIR/bed
    export MKUEUE_ETCD_PORT=$((${MKUEUE_ETCD_PORT:-23790} + 100))
    export MKUEUE_MANAGER_PORT=$((${MKUEUE_MANAGER_PORT:-16443} + 100))
    export MKUEUE_WORKER1_PORT=$((${MKUEUE_WORKER1_PORT:-16444} + 100))
    export MKUEUE_WORKER2_PORT=$((${MKUEUE_WORKER2_PORT:-16445} + 100))
    export MKUEUE_PORT_BASE=$((${MKUEUE_PORT_BASE:-19400} + 100))
}

teardown() {
    "$MKUEUE_ROOT/e2e/testbed.sh" down >/dev/null 2>&1 || true
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

@test "a second test bed comes up beside the first and goes away without a trace" {
    "$MKUEUE_ROOT/e2e/testbed.sh" up
    pids=$(awk '{print $1}' "$MKUEUE_E2E_DIR/pids")
    # etcd; per cluster apiserver, controller-manager, scheduler, KWOK; per
    # worker Kueue, JobSet, LeaderWorkerSet
    [ "$(echo "$pids" | wc -w)" -eq 19 ]
    run kubectl --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/worker-2.yaml" get --raw /readyz
    [ "$output" = ok ]
    "$MKUEUE_ROOT/e2e/testbed.sh" down
    for p in $pids; do ! kill -0 "$p" 2>/dev/null; done
    for port in $MKUEUE_ETCD_PORT $((MKUEUE_ETCD_PORT + 1)) $MKUEUE_MANAGER_PORT $MKUEUE_WORKER1_PORT \
        $MKUEUE_WORKER2_PORT $((MKUEUE_PORT_BASE + 11)) $((MKUEUE_PORT_BASE + 12)); do
        ! port_open "$port" || false
    done
    [ ! -e "$MKUEUE_E2E_DIR/pids" ]
}
