#!/usr/bin/env bats
# mkueue-reconciler where it once differed from Kueue's MultiKueue
# controller: a transient absence (the MultiKueueConfig deleted for a while,
# a MultiKueueCluster deleted and re-created) evicts nothing, re-dispatches
# nothing, and never puts a job on two workers; a copy that finished out of
# reach while its Workload changed finishes the Workload; a refused
# kubeconfig is refused in Kueue's words.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 6))
LOST=120 # --worker-lost-timeout, seconds: far longer than any window below
FLAGS=(--leader-elect=false --gc-interval 5s --worker-lost-timeout ${LOST}s
       --probe-interval 1s --worker-timeout 2s)
JOBS=(a b c)

setup_file() {
    rc_bed_setup
    rc_start rc-divergences "$PORT" "${FLAGS[@]}"
}

teardown_file() {
    km apply -f "$MKUEUE_ROOT/e2e/manifests/manager.yaml" >/dev/null
    stop_component rc-divergences
}

setup() {
    NS=$(fresh_ns rcdiv)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    local i
    for i in 1 2; do rc_secret worker-$i "$MKUEUE_E2E_DIR/kubeconfig/worker-$i.yaml"; done
    km delete mkc -l mkueue.test/file=36-div --ignore-not-found --wait=false >/dev/null
    km -n mkueue-system delete secret -l mkueue.test/file=36-div --ignore-not-found >/dev/null
    km apply -f "$MKUEUE_ROOT/e2e/manifests/manager.yaml" >/dev/null
    rc_ns_delete "$NS"
}

# uid of the job's remote copy on a worker (empty when it has none)
remote_uid() { jp "$1" -n "$NS" job "$2" -o jsonpath='{.metadata.uid}'; }

# start_jobs: the three jobs, each Ready on some worker; records where (AT)
# and the UIDs of their remote jobs (UID).
declare -gA AT UID_OF
start_jobs() {
    local j
    for j in "${JOBS[@]}"; do rc_job "$NS" "$j"; done
    for j in "${JOBS[@]}"; do eventually 30 is_ready "$NS" "$j"; done
    for j in "${JOBS[@]}"; do
        AT[$j]=$(rc_cluster_of "$NS" "$j")
        eventually 20 has_remote_job "${AT[$j]}" "$j"
        UID_OF[$j]=$(remote_uid "${AT[$j]}" "$j")
    done
}
has_remote_job() { [ -n "$(remote_uid "$1" "$2")" ]; }

# unchanged: every job still Ready where it was, never retried nor evicted,
# its remote job the same object, and on no other worker.
unchanged() {
    local j other
    for j in "${JOBS[@]}"; do
        other=worker-1; [ "${AT[$j]}" = worker-1 ] && other=worker-2
        eq Ready "$(rc_check_state "$NS" "$j")"
        eq "${AT[$j]}" "$(rc_cluster_of "$NS" "$j")"
        eq "" "$(rc_wl "$NS" "$j" '{.status.admissionChecks[0].retryCount}')"
        eq "" "$(rc_cond "$NS" "$j" Evicted)"
        eq "${UID_OF[$j]}" "$(remote_uid "${AT[$j]}" "$j")"
        eq "" "$(remote_uid "$other" "$j")"
    done
}

@test "the MultiKueueConfig deleted for 20 s with jobs running: nothing is evicted or touched" {
    start_jobs
    km delete multikueueconfig multikueue-config >/dev/null
    local end=$((SECONDS + 20))
    while [ $SECONDS -lt $end ]; do
        unchanged
        sleep 1
    done
    km apply -f "$MKUEUE_ROOT/e2e/manifests/manager.yaml" >/dev/null
    sleep 3
    unchanged
}

@test "a MultiKueueCluster deleted and re-created within workerLostTimeout: no job moves, none runs twice" {
    start_jobs
    local c=${AT[a]}
    km delete mkc "$c" >/dev/null
    local end=$((SECONDS + 15))
    while [ $SECONDS -lt $end ]; do
        unchanged
        sleep 0.5
    done
    km apply -f "$MKUEUE_ROOT/e2e/manifests/manager.yaml" >/dev/null
    eventually 30 is_eq True mkc_active "$c"
    local end=$((SECONDS + 5))
    while [ $SECONDS -lt $end ]; do
        unchanged
        sleep 0.5
    done
}

# bad_cluster NAME KUBECONFIG: a MultiKueueCluster NAME (in no config) whose
# Secret holds KUBECONFIG.
bad_cluster() {
    km -n mkueue-system create secret generic "$1" --from-file=kubeconfig="$2" >/dev/null
    km -n mkueue-system label secret "$1" mkueue.test/file=36-div >/dev/null
    km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: $1, labels: {mkueue.test/file: 36-div}}
spec: {clusterSource: {kubeConfig: {locationType: Secret, location: $1}}}
YAML
}
mkc_cond() { jp manager mkc "$1" -o jsonpath="{.status.conditions[?(@.type==\"Active\")].$2}"; }

@test "kubeconfig refusals in Kueue's words: tokenFile is not allowed; insecure TLS for cluster <name>" {
    local src="$MKUEUE_E2E_DIR/kubeconfig/worker-1.yaml" tf="$BATS_TEST_TMPDIR/tokenfile.yaml"
    local ins="$BATS_TEST_TMPDIR/insecure.yaml" user cl
    user=$(kubectl --kubeconfig "$src" config view -o jsonpath='{.users[0].name}')
    cl=$(kubectl --kubeconfig "$src" config view -o jsonpath='{.clusters[0].name}')
    cp "$src" "$tf"
    kubectl --kubeconfig "$tf" config set "users.$user.tokenFile" /var/run/token >/dev/null
    cp "$src" "$ins"
    kubectl --kubeconfig "$ins" config set "clusters.$cl.insecure-skip-tls-verify" true >/dev/null
    bad_cluster "$NS-tf" "$tf"
    bad_cluster "$NS-ins" "$ins"
    eventually 30 is_eq InsecureKubeConfig mkc_cond "$NS-tf" reason
    [[ "$(mkc_cond "$NS-tf" message)" == "load client config failed: "*"tokenFile is not allowed" ]]
    eventually 30 is_eq InsecureKubeConfig mkc_cond "$NS-ins" reason
    [[ "$(mkc_cond "$NS-ins" message)" == "load client config failed: "*"insecure TLS verification is not allowed for cluster $cl" ]]
    eq False "$(mkc_cond "$NS-tf" status)"
}

@test "a copy that finished out of reach while its Workload changed: the Workload finishes, nothing is sent again" {
    RC_TTL=300 rc_job "$NS" fin # the finished Job (and so its Workload) outlives the checks
    eventually 30 is_ready "$NS" fin
    c=$(rc_cluster_of "$NS" fin)
    w=$(rc_wl_name "$NS" fin)
    eventually 20 has_pods "$c" "$NS" job-name=fin
    rc_secret_dead "$c"
    eventually 30 is_eq False mkc_active "$c"
    # out of mkueue's reach: the job succeeds there, and the manager's
    # Workload changes, so the finished copy also differs from it
    rc_finish_pod "$c" "$NS" fin
    eventually 30 is_eq True jp "$c" -n "$NS" workload "$w" \
        -o jsonpath='{.status.conditions[?(@.type=="Finished")].status}'
    km -n "$NS" patch workload "$w" --type=json \
        -p '[{"op":"add","path":"/spec/podSets/0/template/metadata/annotations/drift","value":"yes"}]' >/dev/null
    rc_secret "$c" "$MKUEUE_E2E_DIR/kubeconfig/$c.yaml"
    eventually 60 is_eq True rc_cond "$NS" fin Finished
    eq Succeeded "$(rc_wl "$NS" fin '{.status.conditions[?(@.type=="Finished")].reason}')"
    eq "" "$(rc_wl "$NS" fin '{.status.admissionChecks[0].retryCount}')"
    eventually 30 no_remote_objects "$NS"
}
