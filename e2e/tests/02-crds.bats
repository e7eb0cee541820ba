#!/usr/bin/env bats
# mkueue's CRDs (charts/mkueue/crds) and the job kinds' real CRDs as the bed installs them:
# Established and structural on every cluster, the example manifests apply,
# short names and printer columns work, Workload status goes through the
# status subresource only, v1beta1 is still served, schema validation rejects
# bad values, and each job kind's real CRD has managedBy where mkueue puts it.
#
# Every object a test creates carries its fresh namespace's name (cluster-scoped
# ones as a prefix), so tests never touch the shared ml-demo/team-a objects of
# other scenarios; teardown deletes all of them.

load helpers

setup() {
    NS=$(fresh_ns crds)
    USED=(manager)   # clusters to clean up; tests append the ones they use
    km create ns "$NS" --save-config >/dev/null
}

teardown() {
    teardown_common
    local c objs
    for c in "${USED[@]}"; do
        objs=$(k "$c" get ns,resourceflavors,clusterqueues,admissionchecks,multikueueconfigs,multikueueclusters \
            -o name | grep -E "/$NS(-|\$)" || true)
        [ -z "$objs" ] || k "$c" delete $objs --ignore-not-found --wait=false >/dev/null
    done
}

# copy_manifest FILE: example manifest FILE with its namespaces and all its
# cluster-scoped names prefixed with $NS (LocalQueue team-a and the Job keep
# their names, inside namespace $NS).
copy_manifest() {
    sed -E -e "s/\bml-demo\b/$NS/g; s/\bmkueue-system\b/$NS-system/g" \
        -e "s/\b(default-flavor|team-a-cq|multikueue-ac|multikueue-config)\b/$NS-\1/g" \
        -e "s/\bworker-([12])\b/$NS-worker-\1/g" "$MKUEUE_ROOT/e2e/manifests/$1"
}

# apply_copy CONTEXT FILE: applies copy_manifest FILE; refuses (before
# creating anything) a copy that would still create a shared cluster-scoped name.
apply_copy() {
    local leaked
    leaked=$(copy_manifest "$2" | k "$1" apply --dry-run=client -o name -f - |
        grep -v -E "^localqueue\.|^job\.batch/|/$NS(-|\$)" || true)
    eq "" "$leaked"
    copy_manifest "$2" | k "$1" apply -f - >/dev/null
}

# workload NAME: a v1beta2 Workload in $NS for LocalQueue team-a, with a status
# that must not survive creation.
workload() {
    km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: $NS
  name: $1
  labels: {kueue.x-k8s.io/job-uid: 0b6c1f0e-0000-4000-8000-000000000001}
spec:
  queueName: team-a
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: high}
  priority: 100
  podSets:
  - count: 2
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox
          resources: {requests: {cpu: 100m, memory: 64Mi}}
status:
  clusterName: not-through-the-main-resource
YAML
}

# status_patch NAME JSON [KUBECTL-ARGS...]: merge patch through Workload NAME's /status.
status_patch() { km -n "$NS" patch workload "$1" --subresource=status --type=merge -p "$2" "${@:3}"; }

NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
QUOTA_RESERVED='{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
  "message": "Quota reserved", "lastTransitionTime": "'$NOW'"}'
ADMITTED='{"type": "Admitted", "status": "True", "reason": "Admitted",
  "message": "The workload is admitted", "lastTransitionTime": "'$NOW'"}'

# reserve NAME: QuotaReserved in ClusterQueue $NS-team-a-cq, check Pending, nominated.
reserve() {
    status_patch "$1" '{"status": {
      "conditions": ['"$QUOTA_RESERVED"'],
      "admission": {"clusterQueue": "'$NS'-team-a-cq",
                    "podSetAssignments": [{"name": "main", "count": 2,
                      "flavors": {"cpu": "default-flavor", "memory": "default-flavor"},
                      "resourceUsage": {"cpu": "200m", "memory": "128Mi"}}]},
      "admissionChecks": [{"name": "multikueue-ac", "state": "Pending", "message": "",
                           "lastTransitionTime": "'$NOW'"}],
      "nominatedClusterNames": ["worker-1", "worker-2"]}}' >/dev/null
}

@test "every CRD is Established, structural and has its names accepted on every cluster" {
    want=$(km create --dry-run=client -o name -f "$MKUEUE_ROOT/charts/mkueue/crds/" \
        -f "$MKUEUE_BED/manifests/jobs/" | sed 's|.*/||' | sort)
    [ "$(wc -l <<<"$want")" -ge 20 ]
    for c in "${CLUSTERS[@]}"; do
        # names of the CRDs in good shape
        good=$(k "$c" get crd -o json | jq -r '.items[] | select(
            any(.status.conditions[]; .type == "Established" and .status == "True") and
            any(.status.conditions[]; .type == "NamesAccepted" and .status == "True") and
            all(.status.conditions[]; .type != "NonStructuralSchema")) | .metadata.name' | sort)
        eq "" "$(comm -23 <(echo "$want") <(echo "$good"))"
    done
}

@test "worker.yaml applies on a worker (a copy with unique names)" {
    USED+=(worker-1)
    apply_copy worker-1 worker.yaml
    eq "BestEffortFIFO None 8" \
        "$(jp worker-1 clusterqueue "$NS-team-a-cq" -o jsonpath='{.spec.queueingStrategy} {.spec.stopPolicy} {.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota}')"
    eq "$NS-team-a-cq" "$(jp worker-1 -n "$NS" localqueue team-a -o jsonpath='{.spec.clusterQueue}')"
}

@test "manager.yaml and sample-job.yaml apply on the manager; short names resolve" {
    apply_copy manager manager.yaml
    apply_copy manager sample-job.yaml
    eq "$NS-multikueue-ac" \
        "$(jp manager clusterqueue "$NS-team-a-cq" -o jsonpath='{.spec.admissionChecksStrategy.admissionChecks[0].name}')"
    eq "BestEffortFIFO None" \
        "$(jp manager clusterqueue "$NS-team-a-cq" -o jsonpath='{.spec.queueingStrategy} {.spec.stopPolicy}')"
    eq "Secret $NS-worker-2-kubeconfig" \
        "$(jp manager mkc "$NS-worker-2" -o jsonpath='{.spec.clusterSource.kubeConfig.locationType} {.spec.clusterSource.kubeConfig.location}')"
    eq "$NS-worker-1 $NS-worker-2" \
        "$(jp manager mkconf "$NS-multikueue-config" -o jsonpath='{.spec.clusters[*]}')"
    eq team-a "$(jp manager -n "$NS" job sample-job -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')"
    eq "admissioncheck.kueue.x-k8s.io/$NS-multikueue-ac" "$(km get ac "$NS-multikueue-ac" -o name)"
    eq "multikueueconfig.kueue.x-k8s.io/$NS-multikueue-config" "$(km get mkconf "$NS-multikueue-config" -o name)"
    eq "multikueuecluster.kueue.x-k8s.io/$NS-worker-1" "$(km get mkc "$NS-worker-1" -o name)"
    eq "clusterqueue.kueue.x-k8s.io/$NS-team-a-cq" "$(km get cq "$NS-team-a-cq" -o name)"
    for s in lq queue; do
        eq "localqueue.kueue.x-k8s.io/team-a" "$(km -n "$NS" get "$s" team-a -o name)"
    done
}

@test "a v1beta2 Workload gets its defaults, keeps its template and drops status on create" {
    workload wl
    got=$(km -n "$NS" get workload wl -o json)
    eq "main true" "$(jq -r '"\(.spec.podSets[0].name) \(.spec.active)"' <<<"$got")"
    eq "busybox 100m" \
        "$(jq -r '.spec.podSets[0].template.spec.containers[0] | "\(.image) \(.resources.requests.cpu)"' <<<"$got")"
    eq null "$(jq -c .status.clusterName <<<"$got")"
    for s in kwl kueueworkload; do
        eq "workload.kueue.x-k8s.io/wl" "$(km -n "$NS" get "$s" -o name)"
    done
}

@test "Workload status goes through /status only" {
    workload wl
    reserve wl
    got=$(km -n "$NS" get workload wl -o json)
    eq "$NS-team-a-cq Pending worker-1,worker-2 200m" \
        "$(jq -r '.status | "\(.admission.clusterQueue) \(.admissionChecks[0].state) \(.nominatedClusterNames | join(",")) \(.admission.podSetAssignments[0].resourceUsage.cpu)"' <<<"$got")"

    status_patch wl '{"spec": {"queueName": "other"},
      "status": {
        "conditions": ['"$QUOTA_RESERVED, $ADMITTED"'],
        "admissionChecks": [{"name": "multikueue-ac", "state": "Ready",
                             "message": "The workload was admitted on \"worker-1\"",
                             "lastTransitionTime": "'$NOW'"}],
        "nominatedClusterNames": null,
        "clusterName": "worker-1",
        "requeueState": {"count": 1, "requeueAt": "'$NOW'"}}}' >/dev/null
    got=$(km -n "$NS" get workload wl -o json)
    eq "Ready worker-1 null 1 True" \
        "$(jq -r '.status | "\(.admissionChecks[0].state) \(.clusterName) \(.nominatedClusterNames) \(.requeueState.count) \(.conditions[] | select(.type == "Admitted") | .status)"' <<<"$got")"
    eq team-a "$(jq -r .spec.queueName <<<"$got")"   # spec ignored through /status

    # status through the main resource is ignored
    km -n "$NS" patch workload wl --type=merge -p '{"status": {"clusterName": "worker-2"}}' >/dev/null
    eq worker-1 "$(jp manager -n "$NS" workload wl -o jsonpath='{.status.clusterName}')"
}

@test "invalid Workload status is rejected with 422" {
    workload wl
    # -v=6 logs each request with its HTTP status
    run status_patch wl '{"status": {"admissionChecks": [{"name": "multikueue-ac", "state": "Bogus",
        "message": "", "lastTransitionTime": "'$NOW'"}]}}' -v=6
    [ "$status" -ne 0 ]
    [[ "$output" == *'verb="PATCH"'*"/workloads/wl/status"*'status="422 Unprocessable Entity"'* ]]
    [[ "$output" == *'Unsupported value: "Bogus"'* ]]
    run status_patch wl '{"status": {"conditions": [{"type": "Finished", "status": "Maybe",
        "reason": "Succeeded", "message": "", "lastTransitionTime": "'$NOW'"}]}}' -v=6
    [ "$status" -ne 0 ]
    [[ "$output" == *'verb="PATCH"'*"/workloads/wl/status"*'status="422 Unprocessable Entity"'* ]]
    [[ "$output" == *'Unsupported value: "Maybe"'* ]]
    eq "" "$(jp manager -n "$NS" workload wl -o jsonpath='{.status}')"
}

@test "v1beta1 objects are accepted with a deprecation warning and served as v1beta2" {
    run km apply -f - <<YAML
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: $NS-legacy-cq}
spec:
  cohort: $NS-legacy
  namespaceSelector: {}
  admissionChecks: [multikueue-ac]
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: "4"
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: $NS-legacy-worker}
spec:
  kubeConfig:
    location: legacy-kubeconfig
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {namespace: $NS, name: legacy-workload}
spec:
  queueName: team-a
  priorityClassSource: kueue.x-k8s.io/workloadpriorityclass
  priorityClassName: low
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: busybox}]}}
YAML
    [ "$status" -eq 0 ]
    [[ "$output" == *"Warning: This version is deprecated. Use v1beta2 instead."* ]]
    eq "$NS-legacy multikueue-ac" \
        "$(jp manager clusterqueues.v1beta2.kueue.x-k8s.io "$NS-legacy-cq" -o jsonpath='{.spec.cohort} {.spec.admissionChecks[0]}')"
    eq "legacy-kubeconfig" \
        "$(jp manager multikueueclusters.v1beta2.kueue.x-k8s.io "$NS-legacy-worker" -o jsonpath='{.spec.kubeConfig.location}')"
    eq "kueue.x-k8s.io/v1beta2 low" \
        "$(jp manager workloads.v1beta2.kueue.x-k8s.io -n "$NS" legacy-workload -o jsonpath='{.apiVersion} {.spec.priorityClassName}')"
    # v1beta1's Cohort column reads spec.cohort
    eq "$NS-legacy" \
        "$(km get clusterqueues.v1beta1.kueue.x-k8s.io "$NS-legacy-cq" --no-headers 2>/dev/null | awk '{print $2}')"
}

@test "kubectl get shows the printer columns" {
    apply_copy manager manager.yaml
    workload wl
    reserve wl
    status_patch wl '{"status": {"conditions": ['"$QUOTA_RESERVED, $ADMITTED"']}}' >/dev/null
    out=$(km get workloads,localqueues,clusterqueues,admissionchecks,multikueueconfigs,multikueueclusters -A)
    for col in 'NAMESPACE +NAME +QUEUE +RESERVED IN +ADMITTED +FINISHED +AGE' \
        'NAMESPACE +NAME +CLUSTERQUEUE +PENDING WORKLOADS +ADMITTED WORKLOADS' \
        'NAME +COHORT +PENDING WORKLOADS' 'NAME +CONNECTED +AGE' \
        "^$NS +workload.kueue.x-k8s.io/wl +team-a +$NS-team-a-cq +True "; do
        grep -Eq "$col" <<<"$out" || { echo "no '$col' in:"; echo "$out"; false; }
    done
    km get clusterqueues -o wide | grep -Eq 'NAME +COHORT +STRATEGY +PENDING WORKLOADS +ADMITTED WORKLOADS'
}

# rejected WHY: kubectl apply of stdin fails with a message containing WHY.
# --validate=false: the apiserver must reject it, not kubectl's own check.
rejected() {
    run km apply --validate=false -f -
    [ "$status" -ne 0 ] || { echo "accepted: $output" >&2; return 1; }
    [[ "$output" == *"$1"* ]] || { echo "want '$1' in: $output" >&2; return 1; }
}

# (cases Kueue's schema also refuses are held on both sides in 03-crds-vs-kueue)
@test "the apiserver rejects invalid objects" {
    rejected 'Duplicate value: "worker-1"' <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: $NS-dup}
spec: {clusters: [worker-1, worker-1]}
YAML
    rejected 'spec.clusters in body should have at least 1 items' <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: $NS-empty}
spec: {clusters: []}
YAML
    rejected '"spec.clusterSource" must validate one and only one schema' <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: $NS-both}
spec:
  clusterSource:
    kubeConfig: {location: x}
    clusterProfileRef: {name: profile}
YAML
    rejected 'Unsupported value: "Pause"' <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $NS-badstop}
spec: {stopPolicy: Pause}
YAML
    rejected 'spec.podSets: Required value' <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: $NS, name: nopodsets}
spec: {queueName: team-a}
YAML
}

# kind apiVersion managedBy-path (as in docs/multikueue-compat.md section 4)
JOB_KINDS='JobSet jobset.x-k8s.io/v1alpha2 spec.managedBy
PyTorchJob kubeflow.org/v1 spec.runPolicy.managedBy
TFJob kubeflow.org/v1 spec.runPolicy.managedBy
XGBoostJob kubeflow.org/v1 spec.runPolicy.managedBy
PaddleJob kubeflow.org/v1 spec.runPolicy.managedBy
JAXJob kubeflow.org/v1 spec.runPolicy.managedBy
MPIJob kubeflow.org/v2beta1 spec.runPolicy.managedBy
TrainJob trainer.kubeflow.org/v1alpha1 spec.managedBy
RayJob ray.io/v1 spec.managedBy
RayCluster ray.io/v1 spec.managedBy
RayService ray.io/v1 spec.managedBy
AppWrapper workload.codeflare.dev/v1beta2 spec.managedBy'

# schema_has KIND VERSION PATH: the served CRD of KIND declares PATH in its schema.
schema_has() {
    local group=${2%/*} v=${2#*/}
    km get crd -o json | jq -e --arg k "$1" --arg g "$group" --arg v "$v" --arg p "$3" '
        .items[] | select(.spec.group == $g and .spec.names.kind == $k) | .spec.versions[] |
        select(.name == $v) | .schema.openAPIV3Schema |
        getpath(["properties"] + ($p | split(".") | map(., "properties") | .[:-1]))' >/dev/null
}

@test "every job kind's real CRD has managedBy where mkueue's adapter puts it" {
    while read -r kind version path; do
        schema_has "$kind" "$version" "$path" || { echo "$kind $version: no $path" >&2; return 1; }
    done <<<"$JOB_KINDS"
    # and a path that does not exist is told apart
    ! schema_has JobSet jobset.x-k8s.io/v1alpha2 spec.noSuchField || false
}
