# Shared helpers for the bats scenarios. Loaded with `load helpers`.
# The runner exports KUBECONFIG (contexts manager, worker-1, worker-2),
# MKUEUE_E2E_DIR, MKUEUE_ROOT, MKUEUE_BED (the built parts) and HELM, and
# puts the bed's kubectl first on PATH.

CLUSTERS=(manager worker-1 worker-2)
# Our binaries: bin/ by default, or e.g. the ASan+UBSan build (make e2e-asan).
BIN=${MKUEUE_BIN:-$MKUEUE_ROOT/bin}

k() { kubectl --context "$1" "${@:2}"; }
km() { k manager "$@"; }
kw1() { k worker-1 "$@"; }
kw2() { k worker-2 "$@"; }

# A fresh namespace name per test: deletion is asynchronous, so a name is
# never reused within a run.
fresh_ns() { echo "$1-$BATS_TEST_NUMBER-$RANDOM"; }

# eventually SECONDS CMD...: retries CMD every 0.2 s until it succeeds.
eventually() {
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do
        [ $SECONDS -lt $deadline ] || { echo "timed out waiting for: $*" >&2; return 1; }
        sleep 0.2
    done
}

# has_pods CONTEXT NAMESPACE SELECTOR: some pod matches (for `eventually`).
has_pods() { [ -n "$(k "$1" -n "$2" get pods -l "$3" -o name 2>/dev/null)" ]; }

# jsonpath CONTEXT ARGS... -> value printed by kubectl -o jsonpath
jp() { k "$1" get "${@:2}" 2>/dev/null; }

# On failure, show the objects and the tail of each component's log.
dump_state() {
    local c
    for c in "${CLUSTERS[@]}"; do
        echo "# ---- $c"
        k "$c" get workloads,localqueues,clusterqueues,jobs,pods -A -o wide 2>&1 | grep -v kube-system | sed 's/^/# /'
    done
    for f in "$MKUEUE_E2E_DIR"/logs/*.log; do
        case "$f" in *apiserver*|*etcd*|*kcm*|*scheduler*|*kwok*|*jobset-*|*lws-*) continue ;; esac
        echo "# ---- $(basename "$f")"
        grep -v '"informer"' "$f" | tail -n 30 | cut -c1-600 | sed 's/^/# /'
    done
}

teardown_common() {
    if [ -z "${BATS_TEST_COMPLETED:-}" ]; then dump_state >&3; fi
}

# start_component NAME CMD... : runs a binary of ours in the background for a
# scenario (logs in $MKUEUE_E2E_DIR/logs/NAME.log, shown on failure). Call
# stop_component NAME (or stop_all_components) in teardown/teardown_file.
start_component() {
    local name=$1; shift
    mkdir -p "$MKUEUE_E2E_DIR/logs" "$MKUEUE_E2E_DIR/run"
    setsid "$@" >>"$MKUEUE_E2E_DIR/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$MKUEUE_E2E_DIR/run/$name.pid"
}

# stop_component NAME [SIGNAL]: SIGTERM by default, SIGKILL after 10 s.
stop_component() {
    local f="$MKUEUE_E2E_DIR/run/$1.pid" pid i
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    kill -"${2:-TERM}" -- "-$pid" 2>/dev/null || true
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$f"
}

stop_all_components() {
    local f
    for f in "$MKUEUE_E2E_DIR"/run/*.pid; do
        [ -e "$f" ] && stop_component "$(basename "$f" .pid)"
    done
    return 0
}

# count_of CONTEXT RESOURCE ARGS...: how many objects kubectl lists.
count_of() { k "$1" get "${@:2}" -o name 2>/dev/null | grep -c . || true; }

# eq WANT GOT: like [ = ] but shows both values on failure.
eq() { [ "$1" = "$2" ] || { echo "want '$1', got '$2'" >&2; return 1; }; }

# is_eq WANT CMD...: CMD prints WANT (for `eventually`).
is_eq() { [ "$("${@:2}")" = "$1" ]; }
