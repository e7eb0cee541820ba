#!/usr/bin/env bash
# workers-manifest.sh N [SECRET-NAMESPACE]: the MultiKueue chain of a bed
# with N workers (MKUEUE_WORKERS=N e2e/testbed.sh up, or workers added with
# `testbed.sh up-cluster worker-K`).
#
# Applies e2e/manifests/worker.yaml (namespace ml-demo, ClusterQueue
# team-a-cq, LocalQueue team-a) on worker-1 .. worker-N, and prints for the
# manager: MultiKueueConfig multikueue-config listing worker-1 .. worker-N, a
# MultiKueueCluster worker-K per worker, and its kubeconfig Secret
# worker-K-kubeconfig (key "kubeconfig") in SECRET-NAMESPACE (default
# mkueue-system; Kueue's own MultiKueue manager reads kueue-system). Apply
# e2e/manifests/manager.yaml first: it holds the queues and the
# AdmissionCheck, and a 2-worker MultiKueueConfig this output replaces:
#
#   kubectl --context manager apply -f e2e/manifests/manager.yaml
#   e2e/scripts/workers-manifest.sh 8 | kubectl --context manager apply -f -
#
# The bed's state folder is MKUEUE_E2E_DIR (default /tmp/mkueue-e2e).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DIR=${MKUEUE_E2E_DIR:-/tmp/mkueue-e2e}
N=${1:-}
NS=${2:-mkueue-system}
[[ "$N" =~ ^[1-8]$ ]] || { echo "usage: $0 N (1 to 8) [SECRET-NAMESPACE]" >&2; exit 2; }
PATH="$("$ROOT/e2e/scripts/build-testbed.sh")/bin:$PATH"

for i in $(seq "$N"); do
    [ -f "$DIR/kubeconfig/worker-$i.yaml" ] || { echo "$0: no worker-$i in $DIR" >&2; exit 1; }
    kubectl --kubeconfig "$DIR/kubeconfig/worker-$i.yaml" apply -f "$ROOT/e2e/manifests/worker.yaml" >/dev/null
done

cat <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata:
  name: multikueue-config
spec:
  clusters:
$(seq -f '  - worker-%g' "$N")
YAML
for i in $(seq "$N"); do
    cat <<YAML
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata:
  name: worker-$i
spec:
  clusterSource:
    kubeConfig:
      locationType: Secret
      location: worker-$i-kubeconfig
---
apiVersion: v1
kind: Secret
metadata:
  namespace: $NS
  name: worker-$i-kubeconfig
data:
  kubeconfig: $(base64 -w0 <"$DIR/kubeconfig/worker-$i.yaml")
YAML
done
