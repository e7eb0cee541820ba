#!/usr/bin/env bats
# The worker-side Kueue test double (e2e/standin) admits prebuilt Workloads
# within quota in FIFO order, finishes them with their job, and evicts on
# request. Runs on worker-1 in its own namespace.

load helpers

setup() {
    NS=$(fresh_ns standin)
    kw1 create ns "$NS" >/dev/null
    kw1 apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: standin-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: standin-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: standin-flavor
      resources:
      - {name: cpu, nominalQuota: "4"}
      - {name: nvidia.com/gpu, nominalQuota: 2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: $NS, name: team-a}
spec: {clusterQueue: standin-cq}
YAML
}

teardown() {
    teardown_common
    kw1 delete ns "$NS" --wait=false >/dev/null 2>&1 || true
    kw1 delete clusterqueue standin-cq --ignore-not-found >/dev/null
    kw1 delete resourceflavor standin-flavor --ignore-not-found >/dev/null
}

# workload NAME GPUS [PRIORITY]
workload() {
    kw1 apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: $1, namespace: $NS}
spec:
  queueName: team-a
  priority: ${3:-0}
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: c
          image: busybox
          resources: {requests: {cpu: 500m, nvidia.com/gpu: "$2"}}
YAML
}

cond() { jp worker-1 -n "$NS" workload "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}"; }
is_cond() { [ "$(cond "$1" "$2")" = "$3" ]; }

@test "a Workload within quota is admitted with its flavor assignment" {
    workload wl-fits 1
    eventually 20 is_cond wl-fits Admitted True
    is_cond wl-fits QuotaReserved True
    [ "$(jp worker-1 -n "$NS" workload wl-fits -o jsonpath='{.status.admission.clusterQueue}')" = standin-cq ]
    [ "$(jp worker-1 -n "$NS" workload wl-fits -o jsonpath='{.status.admission.podSetAssignments[0].flavors.nvidia\.com/gpu}')" = standin-flavor ]
    [ "$(jp worker-1 -n "$NS" workload wl-fits -o jsonpath='{.status.conditions[?(@.type=="QuotaReserved")].message}')" = "Quota reserved in ClusterQueue standin-cq" ]
}

@test "quota is respected: the second Workload waits until the first finishes" {
    workload wl-first 2
    eventually 20 is_cond wl-first Admitted True
    workload wl-second 2
    sleep 2
    [ "$(cond wl-second Admitted)" != True ]
    # the first one's job completes on the worker; its Workload finishes and frees the quota
    kw1 -n "$NS" create job wl-first-job --image=busybox --dry-run=client -o json -- true |
        jq '.metadata.annotations["kueue.x-k8s.io/prebuilt-workload-name"]="wl-first"' | kw1 create -f - >/dev/null
    eventually 20 has_pods worker-1 "$NS" job-name=wl-first-job
    pod=$(kw1 -n "$NS" get pods -l job-name=wl-first-job -o name)
    kw1 -n "$NS" patch "$pod" --subresource=status --type=merge -p \
        '{"status":{"phase":"Succeeded","containerStatuses":[{"name":"wl-first-job","image":"busybox","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}}' >/dev/null
    eventually 30 is_cond wl-first Finished True
    [ "$(jp worker-1 -n "$NS" workload wl-first -o jsonpath='{.status.conditions[?(@.type=="Finished")].reason}')" = Succeeded ]
    eventually 20 is_cond wl-second Admitted True
}

@test "higher priority is admitted first" {
    workload wl-block 2
    eventually 20 is_cond wl-block Admitted True
    workload wl-low 2 1
    sleep 1
    workload wl-high 2 100
    kw1 -n "$NS" annotate workload wl-block e2e.mkueue.io/evict="make room" >/dev/null
    eventually 20 is_cond wl-high Admitted True
    [ "$(cond wl-low Admitted)" != True ]
}

@test "an eviction request evicts and keeps the Workload out until withdrawn" {
    workload wl-evict 1
    eventually 20 is_cond wl-evict Admitted True
    kw1 -n "$NS" annotate workload wl-evict e2e.mkueue.io/evict="test eviction" >/dev/null
    eventually 20 is_cond wl-evict Evicted True
    is_cond wl-evict QuotaReserved False
    is_cond wl-evict Admitted False
    [ "$(jp worker-1 -n "$NS" workload wl-evict -o jsonpath='{.status.conditions[?(@.type=="Evicted")].message}')" = "test eviction" ]
    [ -z "$(jp worker-1 -n "$NS" workload wl-evict -o jsonpath='{.status.admission}')" ]
    sleep 1
    is_cond wl-evict QuotaReserved False
    kw1 -n "$NS" annotate workload wl-evict e2e.mkueue.io/evict- >/dev/null
    eventually 20 is_cond wl-evict Admitted True
    is_cond wl-evict Evicted False
}

@test "a Workload whose LocalQueue is missing stays pending" {
    kw1 apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: wl-orphan, namespace: $NS}
spec:
  queueName: no-such-queue
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}]
YAML
    sleep 2
    [ -z "$(cond wl-orphan QuotaReserved)" ]
}
