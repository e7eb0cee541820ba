#!/usr/bin/env bats
# Why a job is Pending, from the manager alone (issue 13, layer 1): the
# MultiKueue check's message and the "Pending" Events on the Workload and on
# the job say which step it waits on and why: manager quota, no usable
# worker (each one and why), or what each worker's Kueue says of its copy.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 91))

setup_file() {
    rc_bed_setup
    rc_start rc-why "$PORT" --leader-elect=false --gc-interval 5s --worker-timeout 2s
}

teardown_file() {
    stop_component rc-why
}

setup() {
    NS=$(fresh_ns rcwhy)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
    [ -z "${NS2:-}" ] || rc_ns_delete "$NS2"
    if [ -n "${DEAD:-}" ]; then # the workers' Secrets as they were
        rc_bed_setup
        eventually 60 is_eq True mkc_active worker-1
        eventually 60 is_eq True mkc_active worker-2
    fi
}

check_msg() { rc_wl "$NS" "$1" '{.status.admissionChecks[0].message}'; }
msg_has() { [[ "$(check_msg "$1")" == *"$2"* ]]; }
# events KIND NAME: the messages of the Pending Events about one object
events() {
    km -n "$NS" get events --field-selector "involvedObject.kind=$1,involvedObject.name=$2,reason=Pending" \
        -o jsonpath='{range .items[*]}{.type} {.message}{"\n"}{end}' 2>/dev/null
}
has_event() { events "$1" "$2" | grep -qF -- "$3"; }

@test "a job over the manager's quota says which resource, on its Workload and its job" {
    rc_job "$NS" big 20
    eventually 30 msg_has big "Waiting for quota on the manager: ClusterQueue team-a-cq: the workload requests 20 cpu, more than the nominal quota of 16"
    [ "$(rc_check_state "$NS" big)" = Pending ]
    wl=$(rc_wl_name "$NS" big)
    eventually 10 has_event Workload "$wl" "Normal Waiting for quota on the manager: ClusterQueue team-a-cq"
    eventually 10 has_event Job big "Normal Waiting for quota on the manager: ClusterQueue team-a-cq"
    # nothing went to the workers
    [ "$(rc_count_remote_wls "$NS")" = 0 ]
}

@test "a job that fits the manager but no worker names what each worker's Kueue says, in one Event" {
    rc_job "$NS" wide 12 # manager: 16 cpu; each worker: 8
    both() { msg_has wide "worker-1: couldn't assign flavors to pod set main" &&
             msg_has wide "worker-2: couldn't assign flavors to pod set main"; }
    eventually 30 both
    m=$(check_msg wide)
    [[ "$m" == "Waiting for a worker to admit it: worker-1: "* ]]
    [[ "$m" == *"insufficient quota for cpu in flavor default-flavor"*"(Pending); worker-2: "* ]]
    [ "$(rc_check_state "$NS" wide)" = Pending ]
    wl=$(rc_wl_name "$NS" wide)
    eventually 10 has_event Job wide "Normal Waiting for a worker to admit it: worker-1: "
    # kubectl mkueue says the same, as layer 1
    mkueue why job/wide -n "$NS" |
        grep -q '^Verdict: layer 1 (admission): Waiting for a worker to admit it: worker-1: '
    # more reconciles (a label on the Workload) write nothing and tell nothing new
    km -n "$NS" label workload "$wl" mkueue.test/poke=1 >/dev/null
    km -n "$NS" label workload "$wl" mkueue.test/poke=2 --overwrite >/dev/null
    poked() { [ "$(rc_wl "$NS" wide '{.metadata.labels.mkueue\.test/poke}')" = 2 ]; }
    eventually 10 poked
    [ "$(events Workload "$wl" | grep -c 'Waiting for a worker')" = 1 ]
    [ "$(events Job wide | grep -c 'Waiting for a worker')" = 1 ]
    [ "$(check_msg wide)" = "$m" ]
}

@test "a worker without the namespace and one without the LocalQueue: both reasons, and no copy is held back" {
    # a namespace with its LocalQueue on the manager, on worker-2 without
    # one, not on worker-1 at all
    NS2=$(fresh_ns rcwhyns)
    km create ns "$NS2" >/dev/null
    km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS2, name: team-a}
spec: {clusterQueue: team-a-cq}
YAML
    k worker-2 create ns "$NS2" >/dev/null
    local NS=$NS2
    rc_job "$NS" nowhere
    both() { msg_has nowhere "worker-1: the copy could not be created: namespaces \"$NS\" not found" &&
             msg_has nowhere "worker-2: LocalQueue team-a doesn't exist (Inadmissible)"; }
    eventually 30 both
    [ "$(rc_check_state "$NS" nowhere)" = Pending ]
}

@test "no usable worker: each worker and why, as a Warning" {
    DEAD=1
    rc_secret_dead worker-1
    rc_secret_dead worker-2
    eventually 30 is_eq False mkc_active worker-1
    eventually 30 is_eq False mkc_active worker-2
    rc_job "$NS" stuck
    eventually 30 msg_has stuck "No usable worker: worker-1: not connected (ClientConnectionFailed: "
    msg_has stuck "; worker-2: not connected (ClientConnectionFailed: "
    [[ "$(check_msg stuck)" != *"connection attempts"* ]] # no write per attempt
    eventually 10 has_event Job stuck "Warning No usable worker: worker-1: not connected"
    # the workers are back: the job goes on, and the check says where
    rc_bed_setup
    eventually 60 is_ready "$NS" stuck
    [ "$(check_msg stuck)" = "The workload got reservation on \"$(rc_cluster_of "$NS" stuck)\"" ]
}
