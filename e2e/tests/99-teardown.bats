#!/usr/bin/env bats
# `testbed.sh down` leaves no process and no listening port behind.
# Uses a second, private bed on other ports so the main one keeps running.

load helpers

setup() {
    export MKUEUE_E2E_DIR=$BATS_TEST_TMPDIR/bed
    export MKUEUE_ETCD_PORT=23890 MKUEUE_MANAGER_PORT=16543 MKUEUE_WORKER1_PORT=16544 MKUEUE_WORKER2_PORT=16545
}

teardown() {
    "$MKUEUE_ROOT/e2e/testbed.sh" down >/dev/null 2>&1 || true
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

@test "a second test bed comes up beside the first and goes away without a trace" {
    "$MKUEUE_ROOT/e2e/testbed.sh" up
    pids=$(awk '{print $1}' "$MKUEUE_E2E_DIR/pids")
    [ "$(echo "$pids" | wc -w)" -eq 9 ]   # etcd + 3 apiservers + 3 controller-managers + 2 stand-ins
    run kubectl --kubeconfig "$MKUEUE_E2E_DIR/kubeconfig/worker-2.yaml" get --raw /readyz
    [ "$output" = ok ]
    "$MKUEUE_ROOT/e2e/testbed.sh" down
    for p in $pids; do ! kill -0 "$p" 2>/dev/null; done
    for port in 23890 23891 16543 16544 16545; do ! port_open "$port"; done
    [ ! -e "$MKUEUE_E2E_DIR/pids" ]
}
