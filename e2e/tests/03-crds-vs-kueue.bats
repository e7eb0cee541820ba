#!/usr/bin/env bats
# The chart's CRDs (charts/mkueue/crds, on the manager) held against Kueue's
# real ones (on the workers): what mkueue writes (a Workload's spec and status,
# the MultiKueueCluster and AdmissionCheck statuses) is accepted by Kueue's
# schema and kept as written; Kueue's own example manifests are accepted by
# both; and what Kueue's schema refuses, the chart's refuses too, for the same
# reason. Everything is dry-run=server except the copies on worker-1, whose
# names carry this file's namespace.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 9))

setup_file() {
    export NS; NS=$(fresh_ns crdkueue)
    rc_bed_setup
    rc_ns "$NS"
    rc_start rc-crds "$PORT" --leader-elect=false
    # a real Workload of mkueue's: dispatched, admitted on a worker
    rc_job "$NS" work
    eventually 30 is_ready "$NS" work
    export WL; WL=$(rc_wl_name "$NS" work)
}

teardown_file() {
    stop_component rc-crds
    kw1 delete admissioncheck "$NS-ac" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    kw1 delete multikueuecluster "$NS-worker-1" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    rc_ns_delete "$NS"
}

teardown() { teardown_common; }

# write_status STATUS CONTEXT GET-ARGS...: replaces the status of the object
# GET-ARGS name through /status and prints the object as stored. Kueue may
# write in between: on a conflict, read again and retry (30 s at most).
write_status() {
    local st=$1 c=$2 obj out i; shift 2
    for i in $(seq 30); do
        obj=$(k "$c" get "$@" -o json) || return 1
        out=$(jq --argjson s "$st" '.status = $s' <<<"$obj" |
            k "$c" replace --subresource=status -o json -f - 2>"$BATS_TEST_TMPDIR/err") &&
            { echo "$out"; return 0; }
        grep -q 'the object has been modified' "$BATS_TEST_TMPDIR/err" || { cat "$BATS_TEST_TMPDIR/err" >&2; return 1; }
        sleep 1
    done
    return 1
}

# status_kept STATUS CONTEXT GET-ARGS...: write_status succeeds and the stored
# status is STATUS, field for field (nothing refused, pruned or defaulted).
status_kept() {
    local want out got
    want=$(jq -S . <<<"$1") && [ -n "$want" ] && [ "$want" != null ] || return 1
    out=$(write_status "$@") || return 1
    got=$(jq -S .status <<<"$out")
    [ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got") >&2; return 1; }
}

@test "the Workload mkueue wrote is accepted by Kueue on a worker: spec and status, as written" {
    c=$(rc_cluster_of "$NS" work)
    # the remote copy mkueue made already passed real Kueue (schema and webhooks)
    eq "workload.kueue.x-k8s.io/$WL" "$(rc_remote_wls "$c" "$NS")"
    eq multikueue "$(jp "$c" -n "$NS" workload "$WL" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/multikueue-origin}')"

    wl=$(km -n "$NS" get workload "$WL" -o json)
    spec=$(jq -S .spec <<<"$wl")
    status=$(jq -c .status <<<"$wl")
    # mkueue wrote a full admission: quota, the check Ready, the cluster
    eq "team-a-cq Ready $c True True" "$(jq -r '"\(.admission.clusterQueue) \(.admissionChecks[0].state) \(.clusterName) \(.conditions[] | select(.type == "QuotaReserved") | .status) \(.conditions[] | select(.type == "Admitted") | .status)"' <<<"$status")"

    # Kueue on worker-1 must not admit the copy itself before we write its status
    kw1 -n "$NS" patch localqueue team-a --type=merge -p '{"spec": {"stopPolicy": "Hold"}}' >/dev/null
    jq --arg ns "$NS" '{apiVersion, kind, metadata: {namespace: $ns, name: "copy-of-manager"}, spec}' <<<"$wl" |
        kw1 create -f - >/dev/null
    # the spec is kept as written (Kueue's defaults add nothing, prune nothing)
    eq "$spec" "$(jp worker-1 -n "$NS" workload copy-of-manager -o json | jq -S .spec)"
    # Kueue's webhook sets clusterName only over a status that nominated it, the
    # way mkueue got there: first nominated, then the manager's status as is
    nominated=$(jq -c 'del(.clusterName) | .nominatedClusterNames = ["worker-1", "worker-2"]' <<<"$status")
    status_kept "$nominated" worker-1 -n "$NS" workload copy-of-manager
    status_kept "$status" worker-1 -n "$NS" workload copy-of-manager
}

@test "the MultiKueueCluster and AdmissionCheck statuses mkueue wrote are accepted by Kueue" {
    eventually 30 is_eq True jp manager mkc worker-1 -o jsonpath='{.status.conditions[?(@.type=="Active")].status}'
    eventually 30 is_eq True jp manager ac multikueue-ac -o jsonpath='{.status.conditions[?(@.type=="Active")].status}'
    mkc=$(km get mkc worker-1 -o json)
    ac=$(km get ac multikueue-ac -o json)
    # copies on worker-1 with the manager's spec, then the manager's status
    jq --arg n "$NS-worker-1" '{apiVersion, kind, metadata: {name: $n}, spec}' <<<"$mkc" | kw1 create -f - >/dev/null
    jq --arg n "$NS-ac" '{apiVersion, kind, metadata: {name: $n}, spec}' <<<"$ac" | kw1 create -f - >/dev/null
    status_kept "$(jq -c .status <<<"$mkc")" worker-1 multikueuecluster "$NS-worker-1"
    status_kept "$(jq -c .status <<<"$ac")" worker-1 admissioncheck "$NS-ac"
}

# examples: Kueue's own example objects of group kueue.x-k8s.io as one List,
# cluster-scoped names (and the references to them) prefixed with $NS, the
# LocalQueues in $NS.
examples() {
    yq -c 'select(. != null and (.apiVersion // "" | startswith("kueue.x-k8s.io/")))' \
        "$MKUEUE_BED"/manifests/kueue/examples/*.yaml |
        jq -s --arg p "$NS-" --arg ns "$NS" '{apiVersion: "v1", kind: "List", items: map(
            if .kind == "LocalQueue" then .metadata.namespace = $ns | .spec.clusterQueue |= $p + .
            else .metadata.name |= $p + . end
            | if .spec.cohortName then .spec.cohortName |= $p + . else . end
            | if .spec.parentName then .spec.parentName |= $p + . else . end
            | if .spec.resourceGroups then .spec.resourceGroups[].flavors[].name |= $p + . else . end)}'
}

# lost IN OUT: the paths of the scalars IN sets that OUT lacks or changed (a
# field pruned as unknown, or rewritten), compared as text: Kueue writes the
# quantity 1 back as "1".
lost() {
    jq -n -r --argjson in "$1" --argjson out "$2" '$in | [paths(scalars) as $p
        | select(($out | getpath($p) | tostring) != (getpath($p) | tostring))
        | $p | map(tostring) | join(".")] | join(" ")'
}

# The chart ships no Cohort (docs/multikueue-compat.md: no cohorts): that
# example goes to the worker only.
NOT_IN_CHART="Cohort"

@test "Kueue's example manifests are accepted by the chart's CRDs and by Kueue's" {
    all=$(examples)
    eq "ClusterQueue Cohort LocalQueue ResourceFlavor WorkloadPriorityClass" \
        "$(jq -r '[.items[].kind] | unique | join(" ")' <<<"$all")"
    served=$(km api-resources --api-group=kueue.x-k8s.io --no-headers | awk '{print $NF}' | jq -R . | jq -sc .)
    ours=$(jq --argjson s "$served" '.items |= map(select(.kind as $k | $s | index($k)))' <<<"$all")
    eq "$NOT_IN_CHART" "$(jq -r --argjson o "$ours" '[.items[].kind] - [$o.items[].kind] | unique | join(" ")' <<<"$all")"
    for c in worker-1 manager; do
        in=$all; [ "$c" = manager ] && in=$ours
        out=$(k "$c" create --dry-run=server -o json -f - <<<"$in")
        out=$(jq -s '{items: .}' <<<"$out")
        eq "$c $(jq '.items | length' <<<"$in")" "$c $(jq '.items | length' <<<"$out")"
        # each object comes back with every field it set, unchanged
        eq "$c:" "$c:$(lost "$(jq .items <<<"$in")" "$(jq .items <<<"$out")")"
    done
}

# The Workload whose /status a status case patches: the manager's own (dry-run,
# nothing changes) and, on worker-1, a copy the status test makes.
target() { if [ "$1" = manager ]; then echo "$WL"; else echo status-target; fi; }

# refused WHY [status]: the object on stdin (with "status": the merge patch on
# stdin through the target's /status) is refused, dry-run, on worker-1 by
# Kueue's schema (not its webhooks) and on the manager by the chart's, both
# with a message containing WHY: refused, and for the same reason.
refused() {
    local why=$1 obj c; obj=$(cat)
    for c in worker-1 manager; do
        if [ "${2:-}" = status ]; then
            run k "$c" -n "$NS" patch workload "$(target "$c")" --subresource=status --type=merge \
                --dry-run=server -p "$obj"
        else
            run k "$c" create --dry-run=server --validate=false -f - <<<"$obj"
        fi
        [ "$status" -ne 0 ] || { echo "$c accepted: $output" >&2; return 1; }
        [[ "$output" == *"$why"* ]] || { echo "$c: want '$why' in: $output" >&2; return 1; }
        [[ "$output" != *"admission webhook"* ]] || { echo "$c: a webhook, not the schema: $output" >&2; return 1; }
    done
}

# pod_sets N: N pod sets p1..pN (YAML flow style)
pod_sets() { for i in $(seq "$1"); do printf '{name: p%d, count: 1, template: {spec: {containers: [{name: c, image: busybox}]}}},' "$i"; done; }

@test "what Kueue's schema refuses, the chart's refuses too" {
    cq="apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $NS-bad}"
    wl="apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: $NS, name: bad}"
    refused 'spec.resourceGroups: Too many: 17: must have at most 16 items' <<<"$cq
spec: {resourceGroups: [$(for i in $(seq 17); do printf '{coveredResources: [r%d], flavors: [{name: f, resources: [{name: r%d, nominalQuota: 1}]}]},' "$i" "$i"; done)]}"
    refused 'spec.queueingStrategy: Unsupported value: "LIFO"' <<<"$cq
spec: {queueingStrategy: LIFO}"
    refused 'spec.admissionChecksStrategy.admissionChecks[0].name in body should be at least 1 chars long' <<<"$cq
spec: {admissionChecksStrategy: {admissionChecks: [{name: ''}]}}"
    refused 'spec.podSets in body should have at least 1 items' <<<"$wl
spec: {podSets: []}"
    refused 'spec.podSets[0].count in body should be greater than or equal to 0' <<<"$wl
spec: {podSets: [{name: main, count: -1, template: {}}]}"
    refused "spec.podSets[0].name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?\$'" <<<"$wl
spec: {podSets: [{name: Main_1, count: 1, template: {}}]}"
    refused 'spec.podSets: Too many: 9: must have at most 8 items' <<<"$wl
spec: {podSets: [$(pod_sets 9)]}"
    refused 'spec.clusterQueue in body should match' <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: bad}
spec: {clusterQueue: ''}
YAML
    refused 'spec.controllerName: Required value' <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: $NS-bad}
spec: {parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: c}}
YAML
    refused 'spec.controllerName in body should be at least 1 chars long' <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: $NS-bad}
spec: {controllerName: ''}
YAML
    refused 'spec.clusterSource.kubeConfig.locationType: Unsupported value: "Url"' <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: $NS-bad}
spec: {clusterSource: {kubeConfig: {location: x, locationType: Url}}}
YAML
}

# check NAME STATE [EXTRA-JSON-FIELDS]: a status patch with one admission check.
check() {
    echo '{"status": {"admissionChecks": [{"name": "'"$1"'", "state": "'"$2"'", "message": "",
        "lastTransitionTime": "'"$NOW"'"'"${3:+, $3}"'}]}}'
}
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)

@test "what Kueue's schema refuses in a Workload status, the chart's refuses too" {
    km -n "$NS" get workload "$WL" -o json |
        jq '{apiVersion, kind, metadata: {namespace: .metadata.namespace, name: "status-target"}, spec}' |
        kw1 create -f - >/dev/null
    # the patch helper is sound: a valid check passes on both
    for c in worker-1 manager; do
        k "$c" -n "$NS" patch workload "$(target "$c")" --subresource=status --type=merge \
            --dry-run=server -p "$(check multikueue-ac Pending)" >/dev/null
    done
    check multikueue-ac Bogus | refused 'status.admissionChecks[0].state: Unsupported value: "Bogus"' status
    check "" Ready | refused 'admissionChecks[0].name in body should be at least 1 chars long' status
    check multikueue-ac Retry '"requeueAfterSeconds": -1' |
        refused 'admissionChecks[0].requeueAfterSeconds in body should be greater than or equal to 0' status
    refused 'status.conditions[0].status: Unsupported value: "Maybe"' status <<JSON
{"status": {"conditions": [{"type": "Finished", "status": "Maybe", "reason": "Succeeded",
  "message": "", "lastTransitionTime": "$NOW"}]}}
JSON
}
