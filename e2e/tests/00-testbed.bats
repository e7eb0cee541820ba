#!/usr/bin/env bats
# The test bed itself: three clusters, Kueue's API, the job controllers.

load helpers

setup() { NS=$(fresh_ns tb); }

teardown() {
    teardown_common
    for c in "${CLUSTERS[@]}"; do k "$c" delete ns "$NS" --ignore-not-found --wait=false >/dev/null; done
}

@test "each cluster serves Kueue's API and lists workloads and localqueues" {
    for c in "${CLUSTERS[@]}"; do
        run k "$c" get workloads,localqueues -A
        [ "$status" -eq 0 ]
        run k "$c" api-resources --api-group=kueue.x-k8s.io -o name
        [ "$status" -eq 0 ]
        for r in localqueues clusterqueues admissionchecks multikueueconfigs multikueueclusters workloads; do
            [[ "$output" == *"$r.kueue.x-k8s.io"* ]]
        done
    done
}

@test "a Workload written as v1beta1 is served as v1beta2" {
    k manager create ns $NS
    km apply -f - <<YAML
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: wl-v1beta1, namespace: $NS}
spec:
  queueName: team-a
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: c, image: busybox}]
YAML
    run km get workloads.v1beta2.kueue.x-k8s.io -n "$NS" wl-v1beta1 -o jsonpath='{.apiVersion} {.spec.queueName}'
    [ "$status" -eq 0 ]
    [ "$output" = "kueue.x-k8s.io/v1beta2 team-a" ]
}

@test "workers run Jobs; the manager's Job controller is off" {
    for c in worker-1 manager; do
        k "$c" create ns "$NS"
        k "$c" -n "$NS" create job probe --image=busybox -- true
    done
    eventually 20 has_pods worker-1 "$NS" job-name=probe
    sleep 2
    [ -z "$(km -n "$NS" get pods -o name)" ]
}

@test "the apiserver kubeconfigs use embedded credentials only" {
    for c in "${CLUSTERS[@]}"; do
        run grep -E 'certificate-authority:|client-certificate:|client-key:' "$MKUEUE_E2E_DIR/kubeconfig/$c.yaml"
        [ "$status" -eq 1 ]
    done
}
