#!/usr/bin/env bats
# Pod-based kinds across clusters. The webhook (mutating, for pods only, in
# namespaces opted in with kueue.x-k8s.io/managed-namespace=true) gates the
# pod on the manager; the reconciler builds its Workload, dispatches it, and
# creates the pod on the worker that admitted it first, where KWOK runs it;
# the remote pod's status comes back to the manager pod, which stays gated
# and unscheduled; the finished pod finishes the Workload and is removed
# from the worker. A Deployment's pods are each dispatched so (the webhook
# marks its template), scaled and deleted with it. A kind the reconciler
# does not dispatch gets Kueue's
# "No multikueue adapter found" on its Workload's check.
#
# Ports: MKUEUE_WEBHOOK_PORT (HTTPS) and MKUEUE_WEBHOOK_METRICS_PORT, as
# 20-webhook.bats (never run at the same time).

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 45))

setup_file() {
    rc_bed_setup
    wh_start mkueue-webhook-pods "$MKUEUE_E2E_DIR/webhook-certs-pods"
    # the mutating webhooks for pods and Deployments, as the chart registers them
    register_webhooks Mutating mkueue-e2e-pods "$MKUEUE_E2E_DIR/webhook-certs-pods" \
        '{matchLabels: {kueue.x-k8s.io/managed-namespace: "true"}}' "" \
        "core v1 pods pod CREATE" "apps v1 deployments deployment CREATE,UPDATE"
    rc_start rc-pods "$PORT" --leader-elect=false --gc-interval 5s
}

teardown_file() {
    # first: a webhook left registered without its server fails pod creation
    km delete mutatingwebhookconfiguration mkueue-e2e-pods --ignore-not-found >/dev/null
    stop_component rc-pods
    stop_component mkueue-webhook-pods
}

setup() {
    NS=$(fresh_ns rcpods)
    rc_ns_pods "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

# pod NAME [RESULT]: a pod of queue team-a on the manager, as a user writes it;
# KWOK runs it for RESULT (default Running: until the scenario ends it).
pod() {
    km apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  namespace: $NS
  name: $1
  labels: {kueue.x-k8s.io/queue-name: team-a}
  annotations: {mkueue.test/result: ${2:-Running}, mkueue.test/duration: 1s}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: 100m}}}
YAML
}

pj() { jp "$1" -n "$NS" pod "$2" -o jsonpath="$3"; }
remote_pods() { k "$1" -n "$NS" get pods -l kueue.x-k8s.io/multikueue-origin=multikueue -o name 2>/dev/null; }
# no pod of the namespace is bound to one of the manager's nodes

@test "Pod: gated on the manager, one Workload, run by one worker, status mirrored, finished, removed" {
    pod p1
    # the webhook's mutation: gate and managed label
    eq kueue.x-k8s.io/admission "$(pj manager p1 '{.spec.schedulingGates[*].name}')"
    eq true "$(pj manager p1 '{.metadata.labels.kueue\.x-k8s\.io/managed}')"
    eventually 30 is_ready "$NS" p1
    wl=$(rc_wl_name "$NS" p1)
    # Kueue's GetWorkloadNameForPod: pod-<name>-<5 hex>
    [[ "$wl" =~ ^pod-p1-[0-9a-f]{5}$ ]]
    eq "main 1" "$(rc_wl "$NS" p1 '{.spec.podSets[0].name} {.spec.podSets[0].count}')"
    c=$(rc_cluster_of "$NS" p1)
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    # the remote pod: origin and prebuilt-workload labels; KWOK runs it there
    eventually 20 is_eq Running pj "$c" p1 '{.status.phase}'
    eq multikueue "$(pj "$c" p1 '{.metadata.labels.kueue\.x-k8s\.io/multikueue-origin}')"
    eq "$wl" "$(pj "$c" p1 '{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')"
    [ -n "$(pj "$c" p1 '{.spec.nodeName}')" ]
    eventually 10 is_eq "" remote_pods "$other"
    eq "" "$(rc_remote_wls "$other" "$NS")"
    # the manager pod mirrors it, still gated and never bound to a manager node
    eventually 20 is_eq Running pj manager p1 '{.status.phase}'
    eq True "$(pj manager p1 '{.status.conditions[?(@.type=="PodScheduled")].status}')"
    eq true "$(pj manager p1 '{.status.containerStatuses[0].ready}')"
    eq kueue.x-k8s.io/admission "$(pj manager p1 '{.spec.schedulingGates[*].name}')"
    none_on_manager_nodes
    # the pod ends on the worker: Workload finished, status back, remote pod removed
    k "$c" -n "$NS" annotate --overwrite pod p1 mkueue.test/result=Succeeded mkueue.test/duration=0s >/dev/null
    eventually 30 is_eq True rc_cond "$NS" p1 Finished
    eventually 20 is_eq Succeeded pj manager p1 '{.status.phase}'
    eventually 20 no_remote_objects_pods
    none_on_manager_nodes
    # deleting the manager pod removes its Workload
    km -n "$NS" delete pod p1 >/dev/null
    eventually 20 is_eq "" km -n "$NS" get workloads -o name
}

no_remote_objects_pods() {
    [ -z "$(remote_pods worker-1)$(remote_pods worker-2)" ] && [ "$(rc_count_remote_wls "$NS")" = 0 ]
}

@test "Pod deleted while running: its Workload and the worker's pod go" {
    pod p2
    eventually 30 is_ready "$NS" p2
    c=$(rc_cluster_of "$NS" p2)
    eventually 20 is_eq Running pj "$c" p2 '{.status.phase}'
    km -n "$NS" delete pod p2 >/dev/null
    eventually 20 no_remote_objects_pods
    eventually 20 is_eq "" km -n "$NS" get workloads -o name
}

# events KIND NAME REASON: the Events about one object, "TYPE MESSAGE" lines
events() {
    km -n "$NS" get events --field-selector "involvedObject.kind=$1,involvedObject.name=$2,reason=$3" \
        -o jsonpath='{range .items[*]}{.type} {.message}{"\n"}{end}' 2>/dev/null
}
placement() { rc_wl "$NS" "$1" "{.status.conditions[?(@.type==\"Placement\")].$2}"; }

@test "a lone Pod no worker node can take: Placement False on its Workload and a Warning on the Pod, read from the pod itself" {
    # the fake nodes have no nvidia.com/gpu.product label: none fits
    km apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {namespace: $NS, name: lone, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  restartPolicy: Never
  nodeSelector: {nvidia.com/gpu.product: H100}
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: 100m}}}
YAML
    eventually 180 is_eq False placement lone status
    c=$(rc_cluster_of "$NS" lone)
    [ "$(placement lone reason)" = Unschedulable ]
    [[ "$(placement lone message)" == "$c: 1/1 pods Pending: 0/"*" nodes are available: "* ]]
    # one Warning on each, whatever the pod's updates
    warned() { events "$1" "$2" Unschedulable | grep -c "^Warning $c: 1/1 pods Pending: "; }
    eventually 30 is_eq 1 warned Workload "$(rc_wl_name "$NS" lone)"
    eventually 30 is_eq 1 warned Pod lone
}

# Workloads of the namespace owned by pods of Deployment d
dep_wls() { km -n "$NS" get workloads -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].kind}{"\n"}{end}' 2>/dev/null | grep -c '^Pod$' || true; }
ready_wls() { km -n "$NS" get workloads -o jsonpath='{range .items[*]}{.status.admissionChecks[0].state}{"\n"}{end}' 2>/dev/null | grep -c '^Ready$' || true; }
remote_running() { { k worker-1 -n "$NS" get pods -l app=d --field-selector status.phase=Running -o name; k worker-2 -n "$NS" get pods -l app=d --field-selector status.phase=Running -o name; } 2>/dev/null | grep -c . || true; }
dep_ready() { jp manager -n "$NS" deployment d -o jsonpath='{.status.readyReplicas}'; }

@test "Deployment: each pod its own Workload; ready from the mirrored pods; scaling adds and removes Workloads; deletion cleans up" {
    km apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {namespace: $NS, name: d, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  replicas: 3
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec:
      containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
YAML
    # the webhook marked the pod template; the pods it makes are gated
    eq team-a "$(jp manager -n "$NS" deployment d -o jsonpath='{.spec.template.metadata.labels.kueue\.x-k8s\.io/queue-name}')"
    eventually 30 is_eq 3 dep_wls
    eventually 60 is_eq 3 ready_wls
    eventually 30 is_eq 3 remote_running
    eventually 30 is_eq 3 dep_ready
    eq kueue.x-k8s.io/admission "$(km -n "$NS" get pods -l app=d -o jsonpath='{.items[0].spec.schedulingGates[*].name}')"
    none_on_manager_nodes
    # one Workload per pod, each on exactly one worker
    eq 3 "$(rc_count_remote_wls "$NS")"
    km -n "$NS" scale deployment d --replicas=4 >/dev/null
    eventually 30 is_eq 4 dep_wls
    eventually 60 is_eq 4 remote_running
    eventually 30 is_eq 4 dep_ready
    km -n "$NS" scale deployment d --replicas=2 >/dev/null
    eventually 30 is_eq 2 dep_wls
    eventually 30 is_eq 2 remote_running
    eventually 30 is_eq 2 dep_ready
    none_on_manager_nodes
    km -n "$NS" delete deployment d >/dev/null
    eventually 30 is_eq 0 dep_wls
    eventually 30 no_remote_objects_pods
}

@test "not dispatched: a Workload of an undispatched kind is Rejected with Kueue's message" {
    km -n "$NS" create deployment d --image=busybox --replicas=0 >/dev/null
    uid=$(jp manager -n "$NS" deployment d -o jsonpath='{.metadata.uid}')
    km apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: $NS
  name: deployment-d
  ownerReferences:
  - {apiVersion: apps/v1, kind: Deployment, name: d, uid: $uid, controller: true}
spec:
  queueName: team-a
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]}}
YAML
    km -n "$NS" patch workload deployment-d --subresource=status --type=merge -p \
        '{"status":{"admissionChecks":[{"name":"multikueue-ac","state":"Pending","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}' >/dev/null
    st() { jp manager -n "$NS" workload deployment-d -o jsonpath='{.status.admissionChecks[0].state}: {.status.admissionChecks[0].message}'; }
    eventually 20 is_eq 'Rejected: No multikueue adapter found for owner kind "apps/v1, Kind=Deployment"' st
    eq 0 "$(rc_count_remote_wls "$NS")"
}
