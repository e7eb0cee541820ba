#!/usr/bin/env bats
# More kinds across clusters, through the webhook (mutating) and the
# reconciler:
# * RayService: the webhook sets managedBy and suspends its cluster; one
#   worker runs it (real Kueue there takes the prebuilt Workload as in sync
#   and unsuspends it); a serveConfigV2 edit on the manager reaches the
#   worker's copy in place; the status comes back; deletion cleans up. No
#   KubeRay runs on the bed: the test writes the status its operator would.
# * an external kind (Kueue's multiKueue.externalFrameworks), MyJob of a CRD
#   made here on all three clusters: the webhook sets spec.managedBy, the
#   generic adapter copies it to one worker without managedBy, the whole
#   status comes back, deletion cleans up. The workers' Kueue needs nothing
#   for it: it admits the prebuilt Workload like any other.
# * a configured kind whose CRD the manager lacks: skipped with one log line
#   and a metric.
# * a Deployment of 4 pods that one worker cannot hold: spread over both.
#
# Ports: MKUEUE_WEBHOOK_PORT (HTTPS) and MKUEUE_WEBHOOK_METRICS_PORT, as
# 20-webhook.bats and 45 (never run at the same time).

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 47))
WH_PORT=${MKUEUE_WEBHOOK_PORT:-16446}
WH_MPORT=${MKUEUE_WEBHOOK_METRICS_PORT:-16447}
G=example.mkueue.io
EXT="MyJob.v1.$G"

# the external kind's CRD: any spec, a status subresource
crd() {
    k "$1" apply -f - >/dev/null <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: myjobs.$G}
spec:
  group: $G
  names: {kind: MyJob, listKind: MyJobList, plural: myjobs, singular: myjob}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
YAML
    eventually 30 k "$1" wait --for=condition=Established --timeout=5s "crd/myjobs.$G" >/dev/null
}

setup_file() {
    rc_bed_setup
    local c d=$MKUEUE_E2E_DIR/webhook-certs-kinds
    for c in manager worker-1 worker-2; do crd "$c"; done
    wh_start mkueue-webhook-kinds "$d" --external-frameworks "$EXT"
    # the mutating webhooks as the chart registers them (pod-based kinds in
    # opted-in namespaces only)
    register_webhooks Mutating mkueue-e2e-kinds "$d" "" "" \
        "ray.io v1 rayservices rayservice CREATE" "$G v1 myjobs myjob CREATE"
    register_webhooks Mutating mkueue-e2e-kinds-pods "$d" \
        '{matchLabels: {kueue.x-k8s.io/managed-namespace: "true"}}' "" \
        "core v1 pods pod CREATE" "apps v1 deployments deployment CREATE,UPDATE"
    # Ghost: configured, but no cluster serves it (a fresh log: its warning is counted)
    rm -f "$MKUEUE_E2E_DIR/logs/rc-kinds-more.log"
    rc_start rc-kinds-more "$PORT" --leader-elect=false --gc-interval 5s \
        --external-frameworks "$EXT,Ghost.v1.$G"
}

teardown_file() {
    # first: a webhook left registered without its server fails creations
    km delete mutatingwebhookconfiguration mkueue-e2e-kinds mkueue-e2e-kinds-pods --ignore-not-found >/dev/null
    stop_component rc-kinds-more
    stop_component mkueue-webhook-kinds
    local c
    for c in manager worker-1 worker-2; do
        k "$c" delete crd "myjobs.$G" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    done
}

setup() {
    NS=$(fresh_ns rckm)
    rc_ns_pods "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

POD='{spec: {restartPolicy: Never, containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]}}'

# on CLUSTER RESOURCE NAME JSONPATH
on() { jp "$1" -n "$NS" "$2" "$3" -o jsonpath="$4"; }

# dispatched RESOURCE NAME: Ready, on exactly one worker ($c), the copy
# without managedBy and with the prebuilt Workload's name; none on $other
dispatched() {
    eventually 30 is_ready "$NS" "$2"
    c=$(rc_cluster_of "$NS" "$2")
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    eventually 20 eval "k '$c' -n '$NS' get '$1' '$2' >/dev/null 2>&1"
    eq "" "$(on "$c" "$1" "$2" '{.spec.managedBy}')"
    eq "$(rc_wl_name "$NS" "$2")" "$(on "$c" "$1" "$2" '{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')"
    eventually 20 is_eq "" rc_remote_wls "$other" "$NS"
    ! k "$other" -n "$NS" get "$1" "$2" >/dev/null 2>&1 || false
    # the manager's copy keeps managedBy: it never runs there
    eq kueue.x-k8s.io/multikueue "$(on manager "$1" "$2" '{.spec.managedBy}')"
}

gone_everywhere() {
    km -n "$NS" delete "$1" "$2" >/dev/null
    eventually 30 eval "! k '$c' -n '$NS' get '$1' '$2' >/dev/null 2>&1"
    eventually 30 is_eq "" km -n "$NS" get workloads -o name
    eventually 30 is_eq 0 rc_count_remote_wls "$NS"
}

@test "RayService: mutated, dispatched, in sync on the worker; serveConfigV2 edit forwarded in place; status back; cleaned up" {
    cat >"$BATS_TEST_TMPDIR/rs.yaml" <<YAML
apiVersion: ray.io/v1
kind: RayService
metadata: {namespace: $NS, name: rs, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  serveConfigV2: "applications: [{name: a, import_path: a:app}]"
  rayClusterConfig:
    headGroupSpec: {rayStartParams: {}, template: $POD}
    workerGroupSpecs:
    - {groupName: Cpu, replicas: 2, rayStartParams: {}, template: $POD}
YAML
    # the webhook: managedBy, and the cluster suspended as Kueue suspends it
    # (seen on a dry run: the reconciler unsuspends the stored one once dispatched)
    eq "kueue.x-k8s.io/multikueue true" "$(km create --dry-run=server -f "$BATS_TEST_TMPDIR/rs.yaml" \
        -o jsonpath='{.spec.managedBy} {.spec.rayClusterConfig.suspend}')"
    km apply -f "$BATS_TEST_TMPDIR/rs.yaml" >/dev/null
    eventually 30 is_eq "head cpu" rc_wl "$NS" rs '{.spec.podSets[*].name}'
    eq "1 2" "$(rc_wl "$NS" rs '{.spec.podSets[*].count}')"
    dispatched rayservices rs
    # real Kueue on the worker admits the prebuilt Workload and unsuspends the copy
    wl=$(rc_wl_name "$NS" rs)
    eventually 30 is_eq True on "$c" workload "$wl" '{.status.conditions[?(@.type=="Admitted")].status}'
    eventually 30 is_eq false on "$c" rayservice rs '{.spec.rayClusterConfig.suspend}'
    uid=$(on "$c" workload "$wl" '{.metadata.uid}')
    job_uid=$(on "$c" rayservice rs '{.metadata.uid}')
    # the edit reaches the same copy, which stays admitted where it was
    km -n "$NS" patch rayservice rs --type=merge -p '{"spec":{"serveConfigV2":"applications: [{name: b, import_path: b:app}]"}}' >/dev/null
    eventually 30 is_eq "applications: [{name: b, import_path: b:app}]" on "$c" rayservice rs '{.spec.serveConfigV2}'
    eq "$job_uid" "$(on "$c" rayservice rs '{.metadata.uid}')"
    eq "$uid" "$(on "$c" workload "$wl" '{.metadata.uid}')"
    eq "" "$(on "$c" workload "$wl" '{.status.conditions[?(@.type=="Finished")].reason}')"
    eq "$c" "$(rc_cluster_of "$NS" rs)"
    # KubeRay on the worker reports the service ready; the manager shows it
    k "$c" -n "$NS" patch rayservice rs --subresource=status --type=merge -p \
        '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"NonZeroServeEndpoints","message":"ok","lastTransitionTime":"2026-01-01T00:00:00Z"}],"observedGeneration":2}}' >/dev/null
    eventually 30 is_eq True on manager rayservice rs '{.status.conditions[?(@.type=="Ready")].status}'
    eq 2 "$(on manager rayservice rs '{.status.observedGeneration}')"
    gone_everywhere rayservice rs
}

@test "external kind: the webhook sets spec.managedBy; one worker gets the copy without it; the whole status comes back; deleted" {
    km apply -f - >/dev/null <<YAML
apiVersion: $G/v1
kind: MyJob
metadata: {namespace: $NS, name: mj, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  color: blue
  template: $POD
YAML
    eq kueue.x-k8s.io/multikueue "$(on manager myjob mj '{.spec.managedBy}')"
    eventually 30 is_eq main rc_wl "$NS" mj '{.spec.podSets[*].name}'
    eq 1 "$(rc_wl "$NS" mj '{.spec.podSets[0].count}')"
    dispatched myjobs mj
    eq blue "$(on "$c" myjob mj '{.spec.color}')"
    eq multikueue "$(on "$c" myjob mj '{.metadata.labels.kueue\.x-k8s\.io/multikueue-origin}')"
    # the external controller on the worker writes a status of its own shape
    k "$c" -n "$NS" patch myjob mj --subresource=status --type=merge -p \
        '{"status":{"phase":"Running","progress":{"done":3,"of":5},"conditions":[{"type":"Ok","status":"True"}]}}' >/dev/null
    eventually 30 is_eq Running on manager myjob mj '{.status.phase}'
    eq '{"conditions":[{"status":"True","type":"Ok"}],"phase":"Running","progress":{"done":3,"of":5}}' \
        "$(jp manager -n "$NS" myjob mj -o json | jq -cS .status)"
    gone_everywhere myjob mj
}

@test "a configured kind the manager does not serve: one log line and mkueue_job_kind_not_served" {
    eq 1 "$(rc_metric "$PORT" "mkueue_job_kind_not_served{group=\"$G\",kind=\"Ghost\"}")"
    eq "" "$(rc_metric "$PORT" "mkueue_job_kind_not_served{group=\"$G\",kind=\"MyJob\"}")"
    eq 1 "$(grep -c 'does not serve this job kind' "$MKUEUE_E2E_DIR/logs/rc-kinds-more.log")"
}

dep_running() { k "$1" -n "$NS" get pods -l app=d --field-selector status.phase=Running -o name 2>/dev/null | grep -c . || true; }

@test "Deployment of 4 pods, each worker able to hold 2: the pods spread over both workers and all run" {
    # 3 CPUs a pod: a worker's ClusterQueue (8 CPUs) holds two
    jq -n --arg ns "$NS" '{apiVersion: "apps/v1", kind: "Deployment",
        metadata: {namespace: $ns, name: "d", labels: {"kueue.x-k8s.io/queue-name": "team-a"}},
        spec: {replicas: 4, selector: {matchLabels: {app: "d"}}, template: {metadata: {labels: {app: "d"}},
            spec: {containers: [{name: "c", image: "busybox", resources: {requests: {cpu: "3"}}}]}}}}' |
        km apply -f - >/dev/null
    eventually 90 is_eq 2 dep_running worker-1
    eventually 90 is_eq 2 dep_running worker-2
    eventually 30 is_eq 4 on manager deployment d '{.status.readyReplicas}'
    none_on_manager_nodes
    km -n "$NS" delete deployment d >/dev/null
    eventually 30 is_eq 0 dep_running worker-1
    eventually 30 is_eq 0 dep_running worker-2
    eventually 30 is_eq 0 rc_count_remote_wls "$NS"
}
