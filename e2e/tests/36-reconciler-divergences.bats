#!/usr/bin/env bats
# mkueue-reconciler where it once differed from Kueue's MultiKueue
# controller: a transient absence (the MultiKueueConfig deleted for a while,
# a MultiKueueCluster deleted and re-created) evicts nothing, re-dispatches
# nothing, and never puts a job on two workers; a copy that finished out of
# reach while its Workload changed finishes the Workload; a remote job its
# worker's cache never showed still gets its final status back (read from
# the worker); a refused kubeconfig is refused in Kueue's words.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 6))
LOST=120 # --worker-lost-timeout, seconds: far longer than any window below
FLAGS=(--leader-elect=false --gc-interval 5s --worker-lost-timeout ${LOST}s
       --probe-interval 1s --worker-timeout 2s)
JOBS=(a b c)
PP=$((RC_METRICS_BASE + 42)) # lease-proxy.py in front of worker-1 (final status)

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
    stop_component div-proxy
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

# hide_jobs CLUSTER: e2e/scripts/lease-proxy.py in front of CLUSTER's API
# server, and its Secret pointing there. The proxy answers the reconciler's
# list of jobs (all namespaces) with an empty list and holds its watch
# (--empty): the cluster is connected, its jobs never reach the reconciler's
# cache, and everything else (Workloads, a job created, read by name or
# deleted) goes through. Its requests are logged in $PROXY_LOG.
hide_jobs() {
    rc_proxy div-proxy "$1" "$PP" --empty '^/apis/batch/v1/jobs$'
    rc_secret "$1" "$PROXY_KC"
}
# proxied METHOD PATH ACTION: how many such requests the proxy logged
proxied() {
    jq -s --arg m "$1" --arg p "$2" --arg a "$3" \
        'map(select(.method == $m and .path == $p and .action == $a)) | length' "$PROXY_LOG"
}
at_least() { [ "$("${@:2}")" -ge "$1" ]; }
job_field() { jp manager -n "$NS" job "$1" -o jsonpath="$2"; }

@test "a remote job its worker's cache never showed: the manager job gets its final status" {
    hide_jobs worker-1
    rc_secret_dead worker-2 # the job goes to worker-1
    eventually 30 is_eq False mkc_active worker-2
    # the reconciler is connected to worker-1 through the proxy
    eventually 30 at_least 1 proxied GET /apis/batch/v1/jobs empty
    eventually 30 is_eq True mkc_active worker-1
    RC_TTL=300 rc_job "$NS" fresh
    eventually 30 is_ready "$NS" fresh
    eq worker-1 "$(rc_cluster_of "$NS" fresh)"
    rc_finish_pod worker-1 "$NS" fresh
    eventually 30 is_eq True jp worker-1 -n "$NS" job fresh \
        -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}'
    # the manager job: the worker's final status, counts included
    eventually 60 is_eq True job_field fresh '{.status.conditions[?(@.type=="Complete")].status}'
    eq 1 "$(job_field fresh '{.status.succeeded}')"
    [ -n "$(job_field fresh '{.status.completionTime}')" ]
    eq True "$(job_field fresh '{.status.conditions[?(@.type=="SuccessCriteriaMet")].status}')"
    # its Workload: Kueue's Finished condition
    eventually 30 is_eq True rc_cond "$NS" fresh Finished
    eq Succeeded "$(rc_wl "$NS" fresh '{.status.conditions[?(@.type=="Finished")].reason}')"
    eq "Reached expected number of succeeded pods" \
        "$(rc_wl "$NS" fresh '{.status.conditions[?(@.type=="Finished")].message}')"
    # The job never reached the cache: every list of jobs was answered empty
    # by the proxy. So the reconciler re-sent the create (AlreadyExists, then
    # a GET to check it is ours: one GET per create but the first), and read
    # the job by name once more for its final status.
    eq 0 "$(proxied GET /apis/batch/v1/jobs forward)"
    local posts gets
    posts=$(proxied POST "/apis/batch/v1/namespaces/$NS/jobs" forward)
    gets=$(proxied GET "/apis/batch/v1/namespaces/$NS/jobs/fresh" forward)
    [ "$posts" -ge 1 ]
    [ "$gets" -ge "$posts" ] || { echo "GETs of the job: $gets, creates: $posts" >&2; false; }
}
