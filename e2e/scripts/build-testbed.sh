#!/usr/bin/env bash
# Builds the test bed's upstream parts from the Go modules pinned in
# e2e/gomod/*/go.mod (Kubernetes, etcd, Kueue, the JobSet and
# LeaderWorkerSet controllers, KWOK, Helm), once, into the cache outside the
# repository, and prints the directory that holds them:
#
#   <dir>/bin/        kube-apiserver kube-controller-manager kube-scheduler kubectl
#                     etcd kueue jobset lws kwok helm
#   <dir>/manifests/  kueue/crds/*.yaml, kueue/webhook.yaml (Kueue's own files),
#                     jobset/webhook.yaml, lws/webhook.yaml (theirs),
#                     jobs/*.yaml (the job kinds' real CRDs, from their modules)
#   <dir>/versions    one "name version" line per part
#
# Each part is keyed by the hash of its go.mod, go.sum and build function, so
# a changed pin rebuilds that part only; everything else is reused.
# MKUEUE_CACHE (default /var/cache/mkueue) moves the cache. Progress goes to
# stderr, the directory to stdout. `build-testbed.sh part NAME` builds one.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
MODS=$(cd "$HERE/../gomod" && pwd)
CACHE=${MKUEUE_CACHE:-/var/cache/mkueue}
log() { echo "build-testbed: $*" >&2; }

# One build of the cache at a time: two would write the same part's folder.
mkdir -p "$CACHE"
exec 9>"$CACHE/.build.lock"
flock -n 9 || { log "another build of $CACHE runs: waiting for it"; flock 9; }

command -v go >/dev/null || PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || { log "Go is missing (the machine's Go 1.26 at /usr/local/go)"; exit 1; }
export GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOFLAGS="-mod=readonly -trimpath" CGO_ENABLED=0
export GOTOOLCHAIN=local

# mod_version DIR MODULE: the version DIR's go.mod resolves MODULE to.
mod_version() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }
# mod_dir DIR MODULE: that module's files in the module cache (downloaded).
mod_dir() { (cd "$1" && go mod download -json "$2" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'); }

# A part's key: its go.mod, go.sum and build function, so editing one part's
# recipe rebuilds that part only.
key_of() { { cat "$MODS/$1/go.mod" "$MODS/$1/go.sum"; declare -f "build_$1"; } | sha256sum | cut -c1-12; }

# part NAME: builds e2e/gomod/NAME into $CACHE/parts/NAME-<key> unless done.
part() {
    local name=$1 key out
    key=$(key_of "$name")
    out=$CACHE/parts/$name-$key
    if [ ! -e "$out/.done" ]; then
        log "building $name (once; cached in $out)"
        local t0=$SECONDS
        rm -rf "$out.tmp" && mkdir -p "$out.tmp/bin" "$out.tmp/manifests"
        "build_$name" "$MODS/$name" "$out.tmp"
        touch "$out.tmp/.done"
        rm -rf "$out" && mv "$out.tmp" "$out"
        # earlier builds of this part are not used again: free their space
        find "$CACHE/parts" -maxdepth 1 -name "$name-*" ! -name "$name-$key" -exec rm -rf {} +
        log "$name built in $((SECONDS - t0)) s"
    fi
    echo "$out"
}

build_kubernetes() {
    local v ld="-s -w" p minor
    v=$(mod_version "$1" k8s.io/kubernetes)
    minor=$(echo "$v" | cut -d. -f2)
    # without these, discovery and `kubectl version` report v0.0.0-master
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ld+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor"
        ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
    done
    (cd "$1" && go build -ldflags "$ld" -o "$2/bin/" k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
        k8s.io/kubernetes/cmd/kubectl)
    echo "kubernetes $v" >"$2/versions"
}

build_etcd() {
    local v
    v=$(mod_version "$1" go.etcd.io/etcd/server/v3)
    (cd "$1" && go build -ldflags "-s -w" -o "$2/bin/etcd" go.etcd.io/etcd/server/v3)
    echo "etcd $v" >"$2/versions"
}

build_kueue() {
    local d=$1 o=$2 v m
    v=$(mod_version "$d" sigs.k8s.io/kueue)
    (cd "$d" && go build -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$v" \
        -o "$o/bin/kueue" sigs.k8s.io/kueue/cmd/kueue)
    # Kueue's real CRDs and webhook configurations, from the module's own files
    m=$(mod_dir "$d" sigs.k8s.io/kueue)
    mkdir -p "$o/manifests/kueue/crds" "$o/manifests/jobs"
    cp "$m"/config/components/crd/bases/*.yaml "$o/manifests/kueue/crds/"
    cp "$m/config/components/webhook/manifests.yaml" "$o/manifests/kueue/webhook.yaml"
    # Kueue's own example objects (queues, flavors, cohorts, priority classes)
    mkdir -p "$o/manifests/kueue/examples"
    cp "$m"/cmd/kueueviz/examples/*.yaml "$o/manifests/kueue/examples/"
    # The job kinds' real CRDs, at the versions Kueue pins, from their modules
    local jobs=(
        "sigs.k8s.io/jobset config/components/crd/bases/*.yaml"
        "sigs.k8s.io/lws config/crd/bases/*.yaml"
        "github.com/ray-project/kuberay/ray-operator config/crd/bases/ray.io_*.yaml"
        "github.com/kubeflow/mpi-operator manifests/base/kubeflow.org_mpijobs.yaml"
        "github.com/kubeflow/training-operator manifests/base/crds/kubeflow.org_[ptxj]*jobs.yaml"
        "github.com/kubeflow/trainer/v2 manifests/base/crds/trainer.kubeflow.org_*.yaml"
        "github.com/project-codeflare/appwrapper config/crd/bases/*.yaml"
    )
    local j mod glob f
    for j in "${jobs[@]}"; do
        read -r mod glob <<<"$j"
        m=$(mod_dir "$d" "$mod")
        for f in $m/$glob; do
            [ -e "$f" ] || { log "$mod: no $glob"; return 1; }
            cp "$f" "$o/manifests/jobs/"
        done
        echo "$mod $(mod_version "$d" "$mod")" >>"$o/versions"
    done
    # the trainer's own torch-distributed ClusterTrainingRuntime: TrainJobs name it
    mkdir -p "$o/manifests/runtimes"
    cp "$(mod_dir "$d" github.com/kubeflow/trainer/v2)/manifests/base/runtimes/torch_distributed.yaml" \
        "$o/manifests/runtimes/"
    sed -i "1i kueue $v" "$o/versions"
}

# The JobSet and LeaderWorkerSet controllers, each in its own module: they
# build against an older controller-runtime than Kueue's.
build_jobset() {
    local v
    v=$(mod_version "$1" sigs.k8s.io/jobset)
    (cd "$1" && go build -ldflags "-s -w" -o "$2/bin/jobset" sigs.k8s.io/jobset)
    mkdir -p "$2/manifests/jobset"
    cp "$(mod_dir "$1" sigs.k8s.io/jobset)/config/components/webhook/manifests.yaml" "$2/manifests/jobset/webhook.yaml"
    echo "jobset $v" >"$2/versions"
}

build_lws() {
    local v
    v=$(mod_version "$1" sigs.k8s.io/lws)
    (cd "$1" && go build -ldflags "-s -w" -o "$2/bin/lws" sigs.k8s.io/lws/cmd)
    mkdir -p "$2/manifests/lws"
    cp "$(mod_dir "$1" sigs.k8s.io/lws)/config/webhook/manifests.yaml" "$2/manifests/lws/webhook.yaml"
    echo "lws $v" >"$2/versions"
}

build_kwok() {
    local v
    v=$(mod_version "$1" sigs.k8s.io/kwok)
    (cd "$1" && go build -ldflags "-s -w" \
        -o "$2/bin/kwok" sigs.k8s.io/kwok/cmd/kwok)
    echo "kwok $v" >"$2/versions"
}

build_helm() {
    local v
    v=$(mod_version "$1" helm.sh/helm/v3)
    (cd "$1" && go build -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$v" \
        -o "$2/bin/helm" helm.sh/helm/v3/cmd/helm)
    echo "helm $v" >"$2/versions"
}

# `build-testbed.sh part NAME` builds one part and prints its folder.
if [ "${1:-}" = part ]; then part "$2"; exit 0; fi

# The bed: one folder of links over the parts, keyed by the parts' keys.
PARTS=(kubernetes etcd kueue jobset lws kwok helm)
dirs=() bedkey=""
for n in "${PARTS[@]}"; do
    dirs+=("$(part "$n")")
    bedkey+=$(key_of "$n")
done
bed=$CACHE/testbed-$(echo "$bedkey" | sha256sum | cut -c1-12)
if [ ! -e "$bed/.done" ]; then
    find "$CACHE" -maxdepth 1 -name 'testbed-*' ! -path "$bed" -exec rm -rf {} +
    rm -rf "$bed" && mkdir -p "$bed/bin" "$bed/manifests"
    for d in "${dirs[@]}"; do
        ln -s "$d"/bin/* "$bed/bin/"
        for m in "$d"/manifests/*; do [ -e "$m" ] && ln -s "$m" "$bed/manifests/"; done
        cat "$d/versions" >>"$bed/versions"
    done
    touch "$bed/.done"
fi
echo "$bed"
