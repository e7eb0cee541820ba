#!/usr/bin/env bash
# Validates mkueue's CRDs (charts/mkueue/crds, e2e/crds) and the example
# manifests (e2e/manifests) against a real kube-apiserver 1.20 with a private
# etcd: the CRDs install and become Established, objects of every kind are
# accepted in both served versions, printer columns show, status goes through
# the status subresource only, schema validation rejects bad values, and
# managedBy persists on every test job kind.
#
# Everything runs on 127.0.0.1 and is stopped on exit. Environment:
#   KUBE_DIR        folder with kube-apiserver (default: build-kube.sh's cache)
#   ETCD_PORT       etcd client port (23791); ETCD_PEER_PORT (23792)
#   API_PORT        apiserver secure port (26443)
#   KUBECTL         kubectl binary (kubectl)
# 1.20 notes: --insecure-port only accepts 0 and anonymous requests are
# refused under AlwaysAllow, so the apiserver serves TLS with a throwaway
# self-signed certificate and a static admin token.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KUBE_DIR=${KUBE_DIR:-${MKUEUE_CACHE:-/var/cache/mkueue}/kube-1.20.2}
ETCD_PORT=${ETCD_PORT:-23791}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-23792}
API_PORT=${API_PORT:-26443}
KUBECTL=${KUBECTL:-kubectl}
TOKEN=validate-crds-admin
API=https://127.0.0.1:$API_PORT

work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

log() { echo "validate-crds: $*" >&2; }
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

k() { "$KUBECTL" --kubeconfig "$work/kubeconfig" "$@"; }
# curl against the apiserver; prints the body, fails on HTTP >= 400.
api() { curl -sS -f --cacert "$work/tls.crt" -H "Authorization: Bearer $TOKEN" "$@"; }
# HTTP status code only (for requests that must be rejected).
api_code() {
  curl -sS -o "$work/last-body" -w '%{http_code}' --cacert "$work/tls.crt" \
    -H "Authorization: Bearer $TOKEN" "$@"
}
merge_patch() { # url json
  api -X PATCH -H 'Content-Type: application/merge-patch+json' "$1" -d "$2"
}
# expect <description> <expected> <actual>
expect() {
  if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: want '$2', got '$3'"; fi
}
# reject <description> <kubectl apply input on stdin>
# --validate=false: the apiserver must reject it, not kubectl's own check.
reject() {
  if k apply --validate=false -f - >"$work/out" 2>&1; then
    fail "$1: accepted"
  else
    pass "$1 ($(grep -o -m1 'Invalid value.*\|Unsupported value.*\|Duplicate value.*\|Required value.*\|must validate.*' "$work/out" | head -c 160))"
  fi
}

[ -x "$KUBE_DIR/kube-apiserver" ] || {
  log "no $KUBE_DIR/kube-apiserver (run e2e/scripts/build-kube.sh)"
  exit 2
}

log "starting etcd on 127.0.0.1:$ETCD_PORT"
etcd --data-dir "$work/etcd" --name validate-crds \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "validate-crds=http://127.0.0.1:$ETCD_PEER_PORT" \
  >"$work/etcd.log" 2>&1 &
pids+=($!)

openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
echo "$TOKEN,admin,admin,\"system:masters\"" >"$work/tokens.csv"
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$API", certificate-authority: "$work/tls.crt"}
users:
- name: admin
  user: {token: "$TOKEN"}
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
EOF

for _ in $(seq 20); do
  curl -sf "http://127.0.0.1:$ETCD_PORT/health" >/dev/null && break
  sleep 0.5
done

log "starting kube-apiserver on $API"
"$KUBE_DIR/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --secure-port="$API_PORT" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
  --tls-cert-file="$work/tls.crt" --tls-private-key-file="$work/tls.key" \
  --token-auth-file="$work/tokens.csv" \
  --service-account-key-file="$work/sa.key" \
  --service-account-signing-key-file="$work/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-cluster-ip-range=10.0.0.0/24 \
  --authorization-mode=AlwaysAllow \
  >"$work/apiserver.log" 2>&1 &
pids+=($!)

ready=0
for _ in $(seq 60); do
  if api "$API/readyz" >/dev/null 2>&1; then ready=1; break; fi
  sleep 1
done
if [ "$ready" != 1 ]; then
  log "apiserver not ready; last log lines:"
  tail -n 20 "$work/apiserver.log" >&2
  exit 1
fi
log "apiserver $(api "$API/version" | jq -r .gitVersion) ready"

# --- CRDs -----------------------------------------------------------------
if k apply -f "$ROOT/charts/mkueue/crds/" -f "$ROOT/e2e/crds/" >"$work/out" 2>&1; then
  pass "apply $(grep -c created "$work/out") CRDs"
else
  fail "apply CRDs"; cat "$work/out"
fi
if k wait --for condition=established crd --all --timeout=60s >/dev/null; then
  pass "all CRDs Established"
else
  fail "CRDs Established"
fi
bad=$(k get crd -o json | jq -r '.items[] | select(any(.status.conditions[];
  (.type == "NonStructuralSchema" or .type == "NamesAccepted" and .status != "True"))) | .metadata.name')
expect "every CRD structural with names accepted" "" "$bad"

# --- example manifests -------------------------------------------------------
# One apiserver plays both roles: the worker layout first, then the manager's
# on top (it adds the admission check to the same ClusterQueue).
for m in worker manager sample-job; do
  if k apply -f "$ROOT/e2e/manifests/$m.yaml" >"$work/out" 2>&1; then
    pass "apply e2e/manifests/$m.yaml"
  else
    fail "apply e2e/manifests/$m.yaml"; cat "$work/out"
  fi
done
expect "ClusterQueue names the admission check" "multikueue-ac" \
  "$(k get clusterqueue team-a-cq -o jsonpath='{.spec.admissionChecksStrategy.admissionChecks[0].name}')"
expect "ClusterQueue defaults (queueingStrategy, stopPolicy)" "BestEffortFIFO None" \
  "$(k get clusterqueue team-a-cq -o jsonpath='{.spec.queueingStrategy} {.spec.stopPolicy}')"
expect "MultiKueueCluster locationType" "Secret worker-2-kubeconfig" \
  "$(k get mkc worker-2 -o jsonpath='{.spec.clusterSource.kubeConfig.locationType} {.spec.clusterSource.kubeConfig.location}')"
expect "short names ac, mkconf, mkc resolve" "multikueue-ac multikueue-config worker-1" \
  "$(k get ac,mkconf,mkc -o name | sed 's|.*/||' | head -3 | tr '\n' ' ' | sed 's/ $//')"

# --- Workload (v1beta2) -------------------------------------------------------
WL=$API/apis/kueue.x-k8s.io/v1beta2/namespaces/ml-demo/workloads
k apply -f - >/dev/null <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: ml-demo
  name: job-sample-job-1a2b3
  labels:
    kueue.x-k8s.io/job-uid: 0b6c1f0e-0000-4000-8000-000000000001
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
EOF
got=$(api "$WL/job-sample-job-1a2b3")
expect "Workload defaults podSets[0].name=main, active=true" "main true" \
  "$(jq -r '"\(.spec.podSets[0].name) \(.spec.active)"' <<<"$got")"
expect "Workload keeps podSets[].template (open-ended)" "busybox 100m" \
  "$(jq -r '.spec.podSets[0].template.spec.containers[0] | "\(.image) \(.resources.requests.cpu)"' <<<"$got")"
expect "short names kwl, kueueworkload resolve" "job-sample-job-1a2b3 job-sample-job-1a2b3" \
  "$(k get kwl -n ml-demo -o name | sed 's|.*/||') $(k get kueueworkload -n ml-demo -o name | sed 's|.*/||')"
expect "status ignored on create (status subresource)" "null" "$(jq -c .status.clusterName <<<"$got")"

now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
merge_patch "$WL/job-sample-job-1a2b3/status" "$(cat <<EOF
{"status": {
  "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                  "message": "Quota reserved in ClusterQueue team-a-cq", "lastTransitionTime": "$now"}],
  "admission": {"clusterQueue": "team-a-cq",
                "podSetAssignments": [{"name": "main", "count": 2,
                  "flavors": {"cpu": "default-flavor", "memory": "default-flavor"},
                  "resourceUsage": {"cpu": "200m", "memory": "128Mi"}}]},
  "admissionChecks": [{"name": "multikueue-ac", "state": "Pending", "message": "",
                       "lastTransitionTime": "$now"}],
  "nominatedClusterNames": ["worker-1", "worker-2"]}}
EOF
)" >/dev/null
got=$(api "$WL/job-sample-job-1a2b3")
expect "status patch persists (admission, check, nominated)" "team-a-cq Pending worker-1,worker-2 200m" \
  "$(jq -r '.status | "\(.admission.clusterQueue) \(.admissionChecks[0].state) \(.nominatedClusterNames | join(",")) \(.admission.podSetAssignments[0].resourceUsage.cpu)"' <<<"$got")"

merge_patch "$WL/job-sample-job-1a2b3/status" "$(cat <<EOF
{"spec": {"queueName": "other"},
 "status": {
  "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                  "message": "Quota reserved in ClusterQueue team-a-cq", "lastTransitionTime": "$now"},
                 {"type": "Admitted", "status": "True", "reason": "Admitted",
                  "message": "The workload is admitted", "lastTransitionTime": "$now"}],
  "admissionChecks": [{"name": "multikueue-ac", "state": "Ready",
                       "message": "The workload was admitted on \"worker-1\"",
                       "lastTransitionTime": "$now"}],
  "nominatedClusterNames": null,
  "clusterName": "worker-1",
  "requeueState": {"count": 1, "requeueAt": "$now"}}}
EOF
)" >/dev/null
got=$(api "$WL/job-sample-job-1a2b3")
expect "status patch: Ready check, clusterName, nominated cleared, requeueState" \
  "Ready worker-1 null 1" \
  "$(jq -r '.status | "\(.admissionChecks[0].state) \(.clusterName) \(.nominatedClusterNames) \(.requeueState.count)"' <<<"$got")"
expect "spec ignored through /status" "team-a" "$(jq -r .spec.queueName <<<"$got")"

code=$(api_code -X PATCH -H 'Content-Type: application/merge-patch+json' \
  "$WL/job-sample-job-1a2b3/status" \
  -d "{\"status\":{\"admissionChecks\":[{\"name\":\"multikueue-ac\",\"state\":\"Bogus\",\"message\":\"\",\"lastTransitionTime\":\"$now\"}]}}")
expect "status patch with unknown check state rejected" 422 "$code"
code=$(api_code -X PATCH -H 'Content-Type: application/merge-patch+json' \
  "$WL/job-sample-job-1a2b3/status" \
  -d '{"status":{"conditions":[{"type":"Finished","status":"Maybe","reason":"Succeeded","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}')
expect "status patch with condition status Maybe rejected" 422 "$code"

# --- v1beta1 objects are still accepted ------------------------------------
if k apply -f - >"$work/out" 2>&1 <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: legacy-cq
spec:
  cohort: legacy
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
metadata:
  name: legacy-worker
spec:
  kubeConfig:
    location: legacy-kubeconfig
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  namespace: ml-demo
  name: legacy-workload
spec:
  queueName: team-a
  priorityClassSource: kueue.x-k8s.io/workloadpriorityclass
  priorityClassName: low
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: busybox}]}}
EOF
then
  pass "v1beta1 ClusterQueue (cohort, flat admissionChecks), MultiKueueCluster, Workload accepted"
else
  fail "v1beta1 objects"; cat "$work/out"
fi
if grep -q 'This version is deprecated. Use v1beta2 instead.' "$work/out"; then
  pass "v1beta1 warns about deprecation"
else
  fail "v1beta1 deprecation warning missing"
fi
expect "v1beta1 ClusterQueue read back as v1beta2 (stored as written)" "legacy multikueue-ac" \
  "$(api "$API/apis/kueue.x-k8s.io/v1beta2/clusterqueues/legacy-cq" | jq -r '"\(.spec.cohort) \(.spec.admissionChecks[0])"')"
expect "v1beta1 Cohort column" "legacy" \
  "$(k get clusterqueues.v1beta1.kueue.x-k8s.io legacy-cq --no-headers 2>/dev/null | awk '{print $2}')"

# --- printer columns ---------------------------------------------------------
k get workloads,localqueues,clusterqueues,admissionchecks,multikueueconfigs,multikueueclusters -A \
  | tee "$work/get"
for col in 'QUEUE *RESERVED IN *ADMITTED *FINISHED *AGE' \
  'CLUSTERQUEUE *PENDING WORKLOADS *ADMITTED WORKLOADS' \
  'COHORT *PENDING WORKLOADS' 'CONNECTED *AGE' \
  'job-sample-job-1a2b3 *team-a *team-a-cq *True'; do
  if grep -q "$col" "$work/get"; then pass "columns: $col"; else fail "columns: $col"; fi
done
if k get clusterqueues -o wide | grep -q 'COHORT *STRATEGY *PENDING WORKLOADS *ADMITTED WORKLOADS'; then
  pass "ClusterQueue wide columns"
else
  fail "ClusterQueue wide columns"
fi

# --- schema rejections --------------------------------------------------------
reject "MultiKueueConfig with duplicate clusters" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: dup}
spec: {clusters: [worker-1, worker-1]}
EOF
reject "MultiKueueConfig without clusters" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: empty}
spec: {clusters: []}
EOF
reject "MultiKueueCluster with kubeConfig and clusterProfileRef" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: both}
spec:
  clusterSource:
    kubeConfig: {location: x}
    clusterProfileRef: {name: y}
EOF
reject "MultiKueueCluster with locationType Url" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: url}
spec: {clusterSource: {kubeConfig: {location: x, locationType: Url}}}
EOF
reject "AdmissionCheck without controllerName" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: nocontroller}
spec: {parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: c}}
EOF
reject "ClusterQueue with stopPolicy Pause" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: badstop}
spec: {stopPolicy: Pause}
EOF
reject "Workload without podSets" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: ml-demo, name: nopodsets}
spec: {queueName: team-a}
EOF
reject "Workload with 19 podSets" <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: ml-demo, name: toomany}
spec:
  podSets: [$(for i in $(seq 19); do printf '{name: p%d, template: {}},' "$i"; done)]
EOF

# --- managedBy on the test job kinds -------------------------------------------
# kind apiVersion managedBy-path (as in docs/multikueue-reference.md section 4)
while read -r kind version path; do
  name=$(tr 'A-Z' 'a-z' <<<"$kind")-sample
  if [ "$path" = spec.runPolicy.managedBy ]; then
    spec='{"runPolicy": {"managedBy": "kueue.x-k8s.io/multikueue", "suspend": true}}'
  else
    spec='{"managedBy": "kueue.x-k8s.io/multikueue", "suspend": true}'
  fi
  k apply -f - >/dev/null <<EOF
{"apiVersion": "$version", "kind": "$kind",
 "metadata": {"namespace": "ml-demo", "name": "$name",
              "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
 "spec": $spec}
EOF
  expect "$kind keeps $path" "kueue.x-k8s.io/multikueue" \
    "$(k get "$(tr 'A-Z' 'a-z' <<<"$kind").${version%/*}" -n ml-demo "$name" -o jsonpath="{.${path}}")"
done <<'EOF'
JobSet jobset.x-k8s.io/v1alpha2 spec.managedBy
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
AppWrapper workload.codeflare.dev/v1beta2 spec.managedBy
EOF
JS=$API/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml-demo/jobsets/jobset-sample
merge_patch "$JS/status" '{"status": {"conditions": [{"type": "Completed", "status": "True"}], "restarts": 0}}' >/dev/null
merge_patch "$JS" '{"status": {"restarts": 7}}' >/dev/null
expect "JobSet status via /status persists, status via main resource ignored" "Completed 0" \
  "$(api "$JS" | jq -r '"\(.status.conditions[0].type) \(.status.restarts)"')"
PT=$API/apis/kubeflow.org/v1/namespaces/ml-demo/pytorchjobs/pytorchjob-sample
merge_patch "$PT/status" '{"status": {"conditions": [{"type": "Succeeded", "status": "True"}]}}' >/dev/null
expect "PyTorchJob status via /status persists" "Succeeded" \
  "$(api "$PT" | jq -r '.status.conditions[0].type')"
k apply -f - >/dev/null <<'EOF'
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {namespace: ml-demo, name: lws-sample, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec: {replicas: 2, leaderWorkerTemplate: {size: 3}}
EOF
expect "LeaderWorkerSet accepted" "2" \
  "$(k get leaderworkersets -n ml-demo lws-sample -o jsonpath='{.spec.replicas}')"

echo
if [ "$fails" -gt 0 ]; then
  log "$fails check(s) failed"
  exit 1
fi
log "all checks passed"
