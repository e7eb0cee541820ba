#!/usr/bin/env bats
# Kinds that dispatch many pods as one Workload. A pod group (label
# kueue.x-k8s.io/pod-group-name, annotation pod-group-total-count) waits
# until all its pods exist, then runs whole on one worker (KWOK), its pods'
# status mirrored back, and finishes and is cleaned up together. A
# StatefulSet is one Workload of `replicas` pods: the set runs on one
# worker, its manager pods stay gated, deleting it removes the copies. A
# LeaderWorkerSet is one Workload per replica, all on the worker the first
# one got (the manager runs no LeaderWorkerSet controller: no pods there).
#
# Ports: MKUEUE_WEBHOOK_PORT (HTTPS) and MKUEUE_WEBHOOK_METRICS_PORT, as
# 20-webhook.bats and 45-reconciler-pods.bats (never run at the same time).

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 46))
LOG=$MKUEUE_E2E_DIR/logs/rc-groups.log

# The mutating webhooks for pods, StatefulSets and LeaderWorkerSets, as the
# chart registers them.
setup_file() {
    rc_bed_setup
    local d=$MKUEUE_E2E_DIR/webhook-certs-groups
    wh_start mkueue-webhook-groups "$d"
    register_webhooks Mutating mkueue-e2e-groups "$d" \
        '{matchLabels: {kueue.x-k8s.io/managed-namespace: "true"}}' "" \
        "core v1 pods pod CREATE" "apps v1 statefulsets statefulset CREATE,UPDATE" \
        "leaderworkerset.x-k8s.io v1 leaderworkersets leaderworkerset CREATE,UPDATE"
    rc_start rc-groups "$PORT" --leader-elect=false --gc-interval 5s
}

teardown_file() {
    # first: a webhook left registered without its server fails pod creation
    km delete mutatingwebhookconfiguration mkueue-e2e-groups --ignore-not-found >/dev/null
    stop_component rc-groups
    stop_component mkueue-webhook-groups
}

setup() {
    NS=$(fresh_ns rcgroups)
    rc_ns_pods "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

# gpod CONTEXT NAME [DRY-RUN]: a pod of group grp ($TOTAL pods, 3 unless
# set) of queue team-a; KWOK runs it until the scenario ends it.
gpod() {
    k "$1" apply ${3:+--dry-run=server -o json} -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  namespace: $NS
  name: $2
  labels: {kueue.x-k8s.io/queue-name: team-a, kueue.x-k8s.io/pod-group-name: grp}
  annotations: {kueue.x-k8s.io/pod-group-total-count: "${TOTAL:-3}", mkueue.test/result: Running}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: 100m}}, ports: [{containerPort: 80}]}
YAML
}

pj() { jp "$1" -n "$NS" pod "$2" -o jsonpath="$3"; }
wlj() { jp manager -n "$NS" workload "$1" -o jsonpath="$2"; }
# remote_pods CONTEXT [SELECTOR]: how many pods of the namespace there have
# our origin (or match SELECTOR: a remote set's pods); running_on: those Running
ORIGIN=kueue.x-k8s.io/multikueue-origin=multikueue
remote_pods() { k "$1" -n "$NS" get pods -l "${2:-$ORIGIN}" -o name 2>/dev/null | grep -c . || true; }
running_on() { k "$1" -n "$NS" get pods -l "${2:-$ORIGIN}" --field-selector status.phase=Running -o name 2>/dev/null | grep -c . || true; }
# no pod of the namespace is bound to one of the manager's (KWOK) nodes
no_remote_objects_here() { [ "$(remote_pods worker-1 "$@")$(remote_pods worker-2 "$@")" = 00 ] && [ "$(rc_count_remote_wls "$NS")" = 0 ]; }
waited_for() { grep 'no workload for the pod group yet' "$LOG" | grep -q "$NS/$1"; }
phases() { km -n "$NS" get pods -o jsonpath='{.items[*].status.phase}'; }

# group_of_two_running: pods g-0 and g-1 of a group of 2, admitted and
# Running on their worker, whose name goes into c.
group_of_two_running() {
    TOTAL=2 gpod manager g-0 >/dev/null
    TOTAL=2 gpod manager g-1 >/dev/null
    eventually 30 is_eq Ready wlj grp '{.status.admissionChecks[0].state}'
    c=$(wlj grp '{.status.clusterName}')
    eventually 30 is_eq 2 running_on "$c"
}

@test "pod group of 3: waits for its third pod, then runs whole on one worker, mirrored, finished and removed together" {
    gpod manager g-0 >/dev/null
    gpod manager g-1 >/dev/null
    # the webhook's mutation: gate, managed label and the role, as Kueue's
    # own webhook on a worker computes it for the same pod
    eq kueue.x-k8s.io/admission "$(pj manager g-0 '{.spec.schedulingGates[*].name}')"
    eq true "$(pj manager g-0 '{.metadata.labels.kueue\.x-k8s\.io/managed}')"
    role=$(pj manager g-0 '{.metadata.annotations.kueue\.x-k8s\.io/role-hash}')
    kueue_role=$(gpod worker-1 ref dry | jq -r '.metadata.annotations["kueue.x-k8s.io/role-hash"]')
    eq "$kueue_role" "$role"
    # two of three: no Workload, nothing on a worker
    eventually 30 waited_for g-1
    eq "" "$(km -n "$NS" get workloads -o name)"
    eq 00 "$(remote_pods worker-1)$(remote_pods worker-2)"
    gpod manager g-2 >/dev/null
    # one Workload named after the group, one pod set per role, owned by each pod
    eventually 30 is_eq Ready wlj grp '{.status.admissionChecks[0].state}'
    eq true "$(wlj grp '{.metadata.annotations.kueue\.x-k8s\.io/is-group-workload}')"
    eq "$role 3" "$(wlj grp '{.spec.podSets[*].name} {.spec.podSets[0].count}')"
    eq "Pod Pod Pod" "$(wlj grp '{.metadata.ownerReferences[*].kind}')"
    c=$(wlj grp '{.status.clusterName}')
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    # the whole group on the winner, run by KWOK; its pods keep their role
    eventually 30 is_eq 3 running_on "$c"
    eq 0 "$(remote_pods "$other")"
    eq "" "$(rc_remote_wls "$other" "$NS")"
    eq "$role" "$(pj "$c" g-1 '{.metadata.annotations.kueue\.x-k8s\.io/role-hash}')"
    eq grp "$(pj "$c" g-1 '{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')"
    # each manager pod mirrors its copy, still gated
    eventually 30 is_eq "Running Running Running" phases
    eq kueue.x-k8s.io/admission "$(pj manager g-2 '{.spec.schedulingGates[*].name}')"
    none_on_manager_nodes
    # the group ends on the worker: finished together, copies removed together
    for p in g-0 g-1 g-2; do
        k "$c" -n "$NS" annotate --overwrite pod "$p" mkueue.test/result=Succeeded mkueue.test/duration=0s >/dev/null
    done
    eventually 60 is_eq True wlj grp '{.status.conditions[?(@.type=="Finished")].status}'
    eventually 30 is_eq "Succeeded Succeeded Succeeded" phases
    eventually 30 no_remote_objects_here
    none_on_manager_nodes
    km -n "$NS" delete pods --all >/dev/null
    eventually 30 is_eq "" km -n "$NS" get workloads -o name
}

@test "pod group of 2 given a third pod once admitted: Kueue's excess removal deletes it, the worker keeps two" {
    group_of_two_running
    TOTAL=2 gpod manager g-2 >/dev/null
    # the newest pod past the role's count goes, as Kueue's cleanupExcessPods
    eventually 30 is_eq "" km -n "$NS" get pod g-2 -o name --ignore-not-found
    grep 'excess pod of the group deleted' "$LOG" | grep "\"namespace\":\"$NS\"" | grep -q '"pod":"g-2"'
    # it was never copied: the worker still runs the first two, the Workload unchanged
    sleep 2
    eq 2 "$(remote_pods "$c")"
    eq "" "$(k "$c" -n "$NS" get pod g-2 -o name --ignore-not-found)"
    eq 2 "$(wlj grp '{.spec.podSets[0].count}')"
    eq "Pod Pod" "$(wlj grp '{.metadata.ownerReferences[*].kind}')"
    eq "Running Running" "$(phases)"
}

@test "a pod of a running group fails: WaitingForReplacementPods on the Workload until a replacement pod comes, which joins the group on its worker" {
    group_of_two_running
    eq "" "$(wlj grp '{.status.conditions[?(@.type=="WaitingForReplacementPods")].status}')"
    # g-1 fails on the worker; its manager pod mirrors it: Kueue's words
    k "$c" -n "$NS" annotate --overwrite pod g-1 mkueue.test/result=Failed mkueue.test/duration=0s >/dev/null
    eventually 30 is_eq Failed pj manager g-1 '{.status.phase}'
    eventually 30 is_eq "True PodsFailed Some Failed pods need replacement" \
        wlj grp '{.status.conditions[?(@.type=="WaitingForReplacementPods")].status} {.status.conditions[?(@.type=="WaitingForReplacementPods")].reason} {.status.conditions[?(@.type=="WaitingForReplacementPods")].message}'
    eq "" "$(wlj grp '{.status.conditions[?(@.type=="Finished")].status}')"
    # a replacement: copied to the same worker, the condition False
    TOTAL=2 gpod manager g-2 >/dev/null
    eventually 30 is_eq g-2 pj "$c" g-2 '{.metadata.name}'
    eq grp "$(pj "$c" g-2 '{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')"
    eventually 30 is_eq "False PodsReady No pods need replacement" \
        wlj grp '{.status.conditions[?(@.type=="WaitingForReplacementPods")].status} {.status.conditions[?(@.type=="WaitingForReplacementPods")].reason} {.status.conditions[?(@.type=="WaitingForReplacementPods")].message}'
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    eq 0 "$(remote_pods "$other")"
}

@test "StatefulSet of 3: one Workload, the whole set on one worker, manager pods gated, deletion cleans up" {
    km apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {namespace: $NS, name: s, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  replicas: 3
  serviceName: s
  selector: {matchLabels: {app: s}}
  template:
    metadata: {labels: {app: s}, annotations: {mkueue.test/result: Running}}
    spec:
      containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
YAML
    # the webhook marked the pod template
    tpl() { jp manager -n "$NS" statefulset s -o jsonpath="{.spec.template.metadata.$1}"; }
    eq team-a "$(tpl 'labels.kueue\.x-k8s\.io/queue-name')"
    eq true "$(tpl 'labels.kueue\.x-k8s\.io/managed')"
    eq statefulset "$(tpl 'annotations.kueue\.x-k8s\.io/pod-suspending-parent')"
    # one Workload of replicas pods, owned by the set
    eventually 30 is_ready "$NS" s
    eq "StatefulSet main 3" "$(rc_wl "$NS" s '{.metadata.ownerReferences[0].kind} {.spec.podSets[0].name} {.spec.podSets[0].count}')"
    eq 1 "$(km -n "$NS" get workloads -o name | grep -c .)"
    wl=$(rc_wl_name "$NS" s)
    c=$(rc_cluster_of "$NS" s)
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    # the remote set runs whole there, named for the manager's Workload
    eq "$wl" "$(jp "$c" -n "$NS" statefulset s -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')"
    eventually 60 is_eq 3 running_on "$c" app=s
    eq 0 "$(remote_pods "$other" app=s)"
    eq "" "$(jp "$other" -n "$NS" statefulset s -o name)"
    # the manager's pods stay gated and unbound; no Workload of their own
    eventually 20 has_pods manager "$NS" app=s
    eq kueue.x-k8s.io/admission "$(pj manager s-0 '{.spec.schedulingGates[*].name}')"
    none_on_manager_nodes
    eq 1 "$(km -n "$NS" get workloads -o name | grep -c .)"
    # deleting the set removes its Workload and the worker's copies
    km -n "$NS" delete statefulset s >/dev/null
    eventually 30 is_eq "" km -n "$NS" get workloads -o name
    eventually 30 is_eq "" jp "$c" -n "$NS" statefulset s -o name
    eventually 30 no_remote_objects_here app=s
}

@test "LeaderWorkerSet of 3 replicas: a Workload each, all on the first one's worker; deletion removes every Workload everywhere" {
    km apply -f - >/dev/null <<YAML
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {namespace: $NS, name: l, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  replicas: 3
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      metadata: {annotations: {mkueue.test/result: Running}}
      spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]}
    workerTemplate:
      metadata: {annotations: {mkueue.test/result: Running}}
      spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]}
YAML
    # the webhook marked both templates
    eq leaderworkerset.x-k8s.io/leaderworkerset "$(jp manager -n "$NS" leaderworkerset l -o jsonpath='{.spec.leaderWorkerTemplate.workerTemplate.metadata.annotations.kueue\.x-k8s\.io/pod-suspending-parent}')"
    eq team-a "$(jp manager -n "$NS" leaderworkerset l -o jsonpath='{.spec.leaderWorkerTemplate.leaderTemplate.metadata.labels.kueue\.x-k8s\.io/queue-name}')"
    # one Workload per replica, Kueue's names and pod sets
    wls() { km -n "$NS" get workloads -o jsonpath='{range .items[*]}{.metadata.annotations.kueue\.x-k8s\.io/component-workload-index}{" "}{.status.admissionChecks[0].state}{" "}{.status.clusterName}{"\n"}{end}' 2>/dev/null | sort; }
    ready3() { [ "$(wls | awk '$2 == "Ready"' | wc -l)" = 3 ]; }
    eventually 60 ready3
    eq 1 "$(wls | awk '{print $3}' | sort -u | wc -l)"
    c=$(wls | awk 'NR == 1 {print $3}')
    other=worker-1; [ "$c" = worker-1 ] && other=worker-2
    eq "0 1 2" "$(wls | awk '{print $1}' | xargs)"
    eq "leader worker" "$(km -n "$NS" get workloads -o jsonpath='{.items[0].spec.podSets[*].name}')"
    # the set runs there, every replica (leader and worker each), nothing elsewhere
    eventually 60 is_eq 6 running_on "$c" leaderworkerset.sigs.k8s.io/name=l
    eq 0 "$(remote_pods "$other" leaderworkerset.sigs.k8s.io/name=l)"
    eq "" "$(jp "$other" -n "$NS" leaderworkerset l -o name)"
    eq "" "$(rc_remote_wls "$other" "$NS")"
    none_on_manager_nodes
    km -n "$NS" delete leaderworkerset l >/dev/null
    eventually 30 is_eq "" km -n "$NS" get workloads -o name
    eventually 30 is_eq "" jp "$c" -n "$NS" leaderworkerset l -o name
    eventually 60 no_remote_objects_here leaderworkerset.sigs.k8s.io/name=l
}

@test "a LeaderWorkerSet gone from the manager while the reconciler was away: the garbage collector removes the worker's set" {
    km apply -f - >/dev/null <<YAML
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {namespace: $NS, name: g, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 1
    workerTemplate:
      metadata: {annotations: {mkueue.test/result: Running}}
      spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]}
YAML
    c=
    placed() { c=$(km -n "$NS" get workloads -o jsonpath='{.items[0].status.clusterName}' 2>/dev/null) && [ -n "$c" ]; }
    eventually 60 placed
    eventually 60 is_eq 1 running_on "$c" leaderworkerset.sigs.k8s.io/name=g
    # the manager's set and Workload vanish while no reconciler runs: no
    # Workload is left to name the worker's copy
    stop_component rc-groups
    km -n "$NS" delete leaderworkerset g --wait=false >/dev/null
    km -n "$NS" get workloads -o name | xargs -r -I{} \
        kubectl --context manager -n "$NS" patch {} --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
    eventually 30 is_eq "" km -n "$NS" get workloads -o name
    eq "leaderworkerset.leaderworkerset.x-k8s.io/g" "$(jp "$c" -n "$NS" leaderworkerset g -o name)"
    gc_lws() { grep -c '"orphan deleted".*"resource":"leaderworkersets"' "$LOG" || true; }
    local n0; n0=$(gc_lws)
    rc_start rc-groups "$PORT" --leader-elect=false --gc-interval 5s
    eventually 60 is_eq "" jp "$c" -n "$NS" leaderworkerset g -o name
    eventually 60 no_remote_objects_here leaderworkerset.sigs.k8s.io/name=g
    [ "$(gc_lws)" -gt "$n0" ] # the collector's doing, not another path's
}
