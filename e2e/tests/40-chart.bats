#!/usr/bin/env bats
# The Helm chart on the manager's real apiserver: `helm install` creates
# objects the apiserver accepts, `helm upgrade` changes what it should, `helm
# uninstall` leaves only the CRDs; and the self-managed certificate path end
# to end: Secret created, caBundle patched into both configurations, the
# apiserver calls the webhook with it, a CA rotation swaps it without one
# failed request. No kubelet: the Deployments never get pods (expected).

load helpers

CHART="$MKUEUE_ROOT/charts/mkueue"
REL=mk40

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

setup_file() {
    : "${HELM:?run through e2e/run.sh}"
    export KNS="mk40-sys-$RANDOM" CNS="mk40-certs-$RANDOM"
    export WEBHOOK_BIN="$BIN/mkueue-webhook" WEBHOOK_EXTRA="--metrics-port=$(free_port)"
    export WH_PORT=$(free_port)
}

teardown_file() {
    stop_all_components
    "$HELM" --kube-context manager uninstall "$REL" -n "$KNS" >/dev/null 2>&1 || true
    "$HELM" --kube-context manager uninstall "${REL}c" -n "$CNS" >/dev/null 2>&1 || true
    km delete ns "$KNS" "$CNS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}

teardown() { teardown_common; }

helm_m() { "$HELM" --kube-context manager "$@"; }

# The label the chart's namespaceSelector matches (Kubernetes sets it itself;
# the scenarios set it explicitly so the intent is visible).
name_label() { km label ns "$1" "kubernetes.io/metadata.name=$1" --overwrite >/dev/null; }

mwc_json() { km get mutatingwebhookconfiguration "$1" -o json; }
secret_key() { km -n "$1" get secret "$2" -o json | jq -r --arg k "$3" '.data[$k] // empty'; }

@test "helm install with default values: every object is accepted" {
    km create ns "$KNS"
    name_label "$KNS"
    run helm_m install "$REL" "$CHART" -n "$KNS" --wait=false
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"STATUS: deployed"* ]]
    [[ "$output" == *"Next steps"* ]]
    sel="app.kubernetes.io/instance=$REL"
    [ "$(km -n "$KNS" get deploy -l "$sel" -o name | wc -l)" -eq 2 ]
    [ "$(km -n "$KNS" get svc,sa,cm,pdb,role,rolebinding -l "$sel" -o name | wc -l)" -eq 11 ]
    [ "$(km get clusterrole,clusterrolebinding -l "$sel" -o name | wc -l)" -eq 4 ]
    km -n "$KNS" get secret "$REL-mkueue-webhook-tls"
    [ "$(km -n "$KNS" get deploy "$REL-mkueue-webhook" -o jsonpath='{.spec.replicas}')" = 2 ]
    # every kind
    [ "$(mwc_json "$REL-mkueue-mutating" | jq '.webhooks | length')" = 17 ]
    [ "$(km get validatingwebhookconfiguration "$REL-mkueue-validating" -o json | jq '.webhooks | length')" = 17 ]
    # the apiserver keeps what the chart asked for
    mwc_json "$REL-mkueue-mutating" | jq -e --arg ns "$KNS" '.webhooks[0] | .failurePolicy == "Fail"
        and .sideEffects == "None" and .timeoutSeconds == 10 and .admissionReviewVersions == ["v1"]
        and .clientConfig.service.path == "/mutate-batch-v1-job"
        and (.namespaceSelector.matchExpressions[0].values | index($ns))'
    km -n "$KNS" get cm "$REL-mkueue-reconciler" -o jsonpath='{.data.config\.yaml}' | grep -q '^mode: standalone$'
    # Pod and StatefulSet are dispatched (Kueue's names); a Deployment only through its pods
    km -n "$KNS" get cm "$REL-mkueue-reconciler" -o jsonpath='{.data.config\.yaml}' | grep -qx -- '- pod'
    km -n "$KNS" get cm "$REL-mkueue-reconciler" -o jsonpath='{.data.config\.yaml}' | grep -qx -- '- statefulset'
    ! km -n "$KNS" get cm "$REL-mkueue-reconciler" -o jsonpath='{.data.config\.yaml}' | grep -q deployment || false
    # scope: validation only for labelled objects, pod-based kinds only in opted-in namespaces
    km get validatingwebhookconfiguration "$REL-mkueue-validating" -o json | jq -e 'all(.webhooks[];
        .objectSelector.matchExpressions == [{key: "kueue.x-k8s.io/queue-name", operator: "Exists"}])'
    mwc_json "$REL-mkueue-mutating" | jq -e '[.webhooks[] | select(.rules[0].resources[0] == "pods")][0]
        | .namespaceSelector.matchLabels == {"kueue.x-k8s.io/managed-namespace": "true"}'
    [ "$(km -n "$KNS" get networkpolicy -l "$sel" -o name | wc -l)" -eq 2 ]
    [[ "$output" == *"kueue.x-k8s.io/managed-namespace=true"* ]]
}

@test "helm install refuses webhooks that would select their own namespace" {
    ns=$(fresh_ns mk40-own)
    km create ns "$ns"
    # without matchByName only the opt-out label keeps the release namespace out
    run helm_m install "${REL}o" "$CHART" -n "$ns" --set webhook.namespaceSelector.matchByName=false
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"would select the release namespace $ns"*"could block its own restart"* ]]
    [ -z "$(km get mutatingwebhookconfiguration -l app.kubernetes.io/instance=${REL}o -o name)" ]
    # the chart reads the namespace's labels: opted out, it is accepted
    km label ns "$ns" mkueue.x-k8s.io/webhook-exclude=true
    run helm_m install "${REL}o" "$CHART" -n "$ns" --set webhook.namespaceSelector.matchByName=false --dry-run=server
    echo "$output"
    [ "$status" -eq 0 ]
    km delete ns "$ns" --wait=false
}

@test "RBAC: kubeconfig Secrets by name only; the reconciler cannot read the certificate Secret" {
    run helm_m upgrade "$REL" "$CHART" -n "$KNS" --reuse-values --set 'workerKubeconfigs.secretNames={worker-a}'
    echo "$output"
    [ "$status" -eq 0 ]
    local c as
    for c in reconciler webhook; do
        as="system:serviceaccount:$KNS:$REL-mkueue-$c"
        [ "$(km auth can-i get secret/worker-a -n "$KNS" --as "$as")" = yes ]
        run km auth can-i get secret/other -n "$KNS" --as "$as"
        [ "$output" = no ]
        run km auth can-i list secrets -n "$KNS" --as "$as"
        [ "$output" = no ]
        run km auth can-i watch secrets -n "$KNS" --as "$as"
        [ "$output" = no ]
    done
    # the CA key lives in the certificate Secret: the webhook's alone
    run km auth can-i get "secret/$REL-mkueue-webhook-tls" -n "$KNS" \
        --as "system:serviceaccount:$KNS:$REL-mkueue-reconciler"
    [ "$output" = no ]
    [ "$(km auth can-i get "secret/$REL-mkueue-webhook-tls" -n "$KNS" \
        --as "system:serviceaccount:$KNS:$REL-mkueue-webhook")" = yes ]
}

@test "the installed webhooks are live and skip excluded namespaces" {
    ns=$(fresh_ns mk40-jobs)
    km create ns "$ns"
    # failurePolicy Fail and no webhook pod (no kubelet): creation is refused ...
    run km -n "$ns" create job j --image=busybox -- true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"failed calling webhook"* ]]
    # ... except in the release namespace (by name) and opted-out namespaces
    km -n "$KNS" create job j --image=busybox -- true
    km label ns "$ns" mkueue.x-k8s.io/webhook-exclude=true
    eventually 10 km -n "$ns" create job j2 --image=busybox -- true
    km delete ns "$ns" --wait=false
    # pods: only namespaces opted in to the pod-based kinds are blocked
    ns=$(fresh_ns mk40-pods)
    km create ns "$ns"
    km -n "$ns" run p1 --image=busybox --restart=Never -- true
    km label ns "$ns" kueue.x-k8s.io/managed-namespace=true
    run km -n "$ns" run p2 --image=busybox --restart=Never -- true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"failed calling webhook"* ]]
    km delete ns "$ns" --wait=false
}

@test "helm upgrade changes kinds, policy and the reconciler config, keeps the certificate" {
    # the webhook's data in the Secret (as self-managed mode stores it) must survive
    ca=$(printf 'fake CA\n' | base64 -w0)
    km -n "$KNS" patch secret "$REL-mkueue-webhook-tls" --type merge \
        -p "{\"data\":{\"ca.crt\":\"$ca\",\"tls.crt\":\"$ca\"}}"
    before=$(km -n "$KNS" get deploy "$REL-mkueue-reconciler" -o jsonpath='{.spec.template.metadata.annotations.checksum/config}')
    # Deployment needs Pod
    run helm_m upgrade "$REL" "$CHART" -n "$KNS" --reuse-values --set kinds.Pod=false
    [ "$status" -ne 0 ]
    [[ "$output" == *"kinds.Deployment needs kinds.Pod"* ]]
    run helm_m upgrade "$REL" "$CHART" -n "$KNS" --reuse-values --set kinds.Pod=false --set kinds.Deployment=false --set kinds.JobSet=false \
        --set webhook.timeoutSeconds=5 --set reconciler.dispatcher=Incremental --set webhook.replicas=3
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(mwc_json "$REL-mkueue-mutating" | jq '.webhooks | length')" = 14 ]
    mwc_json "$REL-mkueue-mutating" | jq -e 'all(.webhooks[]; .timeoutSeconds == 5
        and .rules[0].resources != ["pods"] and .rules[0].resources != ["jobsets"])'
    km -n "$KNS" get cm "$REL-mkueue-reconciler" -o jsonpath='{.data.config\.yaml}' | grep -q '^dispatcher: Incremental$'
    after=$(km -n "$KNS" get deploy "$REL-mkueue-reconciler" -o jsonpath='{.spec.template.metadata.annotations.checksum/config}')
    [ -n "$before" ]
    [ "$before" != "$after" ]
    [ "$(km -n "$KNS" get deploy "$REL-mkueue-webhook" -o jsonpath='{.spec.replicas}')" = 3 ]
    [ "$(secret_key "$KNS" "$REL-mkueue-webhook-tls" ca.crt)" = "$ca" ]
    # the stored CA is rendered into every entry (lookup), including re-created ones
    mwc_json "$REL-mkueue-mutating" | jq -e --arg ca "$ca" 'all(.webhooks[]; .clientConfig.caBundle == $ca)'
    # JobSet left the reconciler's integrations and RBAC
    ! km -n "$KNS" get cm "$REL-mkueue-reconciler" -o jsonpath='{.data.config\.yaml}' | grep -q jobset || false
    ! km get clusterrole "$REL-mkueue-reconciler" -o json | jq -e '.rules[] | select(.resources | index("jobsets"))' || false
}

@test "helm uninstall leaves nothing but the CRDs" {
    run helm_m uninstall "$REL" -n "$KNS"
    [ "$status" -eq 0 ]
    sel="app.kubernetes.io/instance=$REL"
    eventually 30 bash -c "[ -z \"\$(kubectl --context manager -n $KNS get deploy,svc,sa,cm,secret,pdb,role,rolebinding -l $sel -o name)\" ]"
    [ -z "$(km get clusterrole,clusterrolebinding,mutatingwebhookconfiguration,validatingwebhookconfiguration -l "$sel" -o name)" ]
    run km -n "$KNS" get secret "$REL-mkueue-webhook-tls"
    [ "$status" -ne 0 ]
    for r in localqueues clusterqueues admissionchecks multikueueconfigs multikueueclusters workloads resourceflavors \
        workloadpriorityclasses; do
        km get crd "$r.kueue.x-k8s.io" -o name
    done
}

# SA kubeconfig: the webhook runs with exactly its chart RBAC.
sa_kubeconfig() {
    local ns=$1 sa=$2 out=$3 token
    eventually 30 km -n "$ns" get sa "$sa" -o name
    # a bound token from the TokenRequest API, as a kubelet would mount it
    token=$(km -n "$ns" create token "$sa" --duration 2h)
    kubectl config view --raw --minify --context manager -o json |
        jq --arg t "$token" '.users[0].user = {token: $t}' >"$out.json"
    kubectl config view --kubeconfig "$out.json" --raw -o yaml >"$out" 2>/dev/null || cp "$out.json" "$out"
}

start_webhook() { # name extra-flags...
    local name=$1; shift
    start_component "$name" "$WEBHOOK_BIN" --kubeconfig "$MKUEUE_E2E_DIR/mk40-sa.yaml" \
        --namespace "$CNS" --port "$WH_PORT" --cert-dir "$MKUEUE_E2E_DIR/mk40-certs" \
        --cert-secret "${REL}c-mkueue-webhook-tls" --cert-service "${REL}c-mkueue-webhook" \
        --cert-sans localhost,127.0.0.1 --mutating-config "${REL}c-mkueue-mutating" \
        --validating-config "${REL}c-mkueue-validating" $WEBHOOK_EXTRA "$@"
}

bundle_of() { km get "$1" "$2" -o json | jq -r '[.webhooks[].clientConfig.caBundle] | unique | if length == 1 then .[0] else "MIXED" end'; }

bundles_match() {
    local ca
    ca=$(secret_key "$CNS" "${REL}c-mkueue-webhook-tls" ca.crt)
    [ -n "$ca" ] && [ "$(bundle_of mutatingwebhookconfiguration "${REL}c-mkueue-mutating")" = "$ca" ] &&
        [ "$(bundle_of validatingwebhookconfiguration "${REL}c-mkueue-validating")" = "$ca" ]
}

@test "self-managed certificates: Secret created, caBundle patched, the apiserver calls the webhook" {
    km create ns "$CNS"
    name_label "$CNS"
    run helm_m install "${REL}c" "$CHART" -n "$CNS" -f "$CHART/values-examples/local-dev.yaml" \
        --set webhook.url="https://127.0.0.1:$WH_PORT" --set webhook.timeoutSeconds=5
    echo "$output"
    [ "$status" -eq 0 ]
    mwc_json "${REL}c-mkueue-mutating" | jq -e --arg u "https://127.0.0.1:$WH_PORT/mutate-batch-v1-job" \
        '.webhooks[0].clientConfig.url == $u and (.webhooks[0].clientConfig.caBundle | not)'
    sa_kubeconfig "$CNS" "${REL}c-mkueue-webhook" "$MKUEUE_E2E_DIR/mk40-sa.yaml"
    rm -rf "$MKUEUE_E2E_DIR/mk40-certs" && mkdir -p "$MKUEUE_E2E_DIR/mk40-certs"
    start_webhook mk40-webhook --ca-days=30 --cert-days=30
    eventually 30 bundles_match
    # the files served are what the Secret holds, valid for 127.0.0.1
    [ "$(base64 -w0 <"$MKUEUE_E2E_DIR/mk40-certs/ca.crt")" = "$(secret_key "$CNS" "${REL}c-mkueue-webhook-tls" ca.crt)" ]
    openssl verify -CAfile "$MKUEUE_E2E_DIR/mk40-certs/ca.crt" "$MKUEUE_E2E_DIR/mk40-certs/tls.crt"
    openssl x509 -in "$MKUEUE_E2E_DIR/mk40-certs/tls.crt" -noout -text | grep -q 'IP Address:127.0.0.1'
    ns=$(fresh_ns mk40-certjobs)
    km create ns "$ns"
    eventually 20 km -n "$ns" create job ok --image=busybox -- true
    # both webhooks answered over TLS (failurePolicy Fail would have refused the Job otherwise)
    km delete ns "$ns" --wait=false
}

@test "self-managed certificates: a CA rotation swaps the caBundle without a failed request" {
    sec="${REL}c-mkueue-webhook-tls"
    old_ca=$(secret_key "$CNS" "$sec" ca.crt)
    old_crt=$(secret_key "$CNS" "$sec" tls.crt)
    [ -n "$old_ca" ]
    [ -n "$old_crt" ]
    stop_component mk40-webhook
    # the CA has 30 days left, under the 60-day renewal threshold: a new CA
    # goes first in the bundle, the serving cert moves to it after 3 s
    start_webhook mk40-webhook --ca-days=3650 --cert-days=30 --ca-renew-before=$((60 * 86400)) \
        --ca-grace=3 --cert-check-interval=1
    eventually 30 bash -c "[ \"\$(kubectl --context manager -n $CNS get secret $sec -o jsonpath='{.data.ca\.crt}')\" != '$old_ca' ]"
    eventually 30 bundles_match
    ns=$(fresh_ns mk40-rotate)
    km create ns "$ns"
    eventually 20 km -n "$ns" create job warm --image=busybox -- true
    # jobs created continuously while the serving certificate moves to the new CA
    ok=0 bad=0 i=0
    deadline=$((SECONDS + 25))
    while [ $SECONDS -lt $deadline ]; do
        i=$((i + 1))
        if km -n "$ns" create job "r$i" --image=busybox -- true >/dev/null 2>"$BATS_TMPDIR/mk40-err"; then
            ok=$((ok + 1))
        else
            bad=$((bad + 1)); cat "$BATS_TMPDIR/mk40-err"
        fi
        [ "$(secret_key "$CNS" "$sec" tls.crt)" != "$old_crt" ] && [ $ok -ge 10 ] && \
            grep -q 'certificate reloaded\|reload' "$MKUEUE_E2E_DIR/logs/mk40-webhook.log" && [ $i -ge 20 ] && break
    done
    echo "created $ok, failed $bad"
    [ "$bad" -eq 0 ]
    [ "$ok" -ge 10 ]
    [ "$(secret_key "$CNS" "$sec" tls.crt)" != "$old_crt" ]
    # the bundle: the new CA first, the old one kept after it
    secret_key "$CNS" "$sec" ca.crt | base64 -d >"$BATS_TMPDIR/mk40-bundle.pem"
    [ "$(grep -c 'BEGIN CERTIFICATE' "$BATS_TMPDIR/mk40-bundle.pem")" -eq 2 ]
    echo "$old_ca" | base64 -d >"$BATS_TMPDIR/mk40-old.pem"
    [ "$(openssl x509 -in "$BATS_TMPDIR/mk40-bundle.pem" -noout -fingerprint)" != "$(openssl x509 -in "$BATS_TMPDIR/mk40-old.pem" -noout -fingerprint)" ]
    # the new serving certificate chains to the new CA alone
    openssl x509 -in "$BATS_TMPDIR/mk40-bundle.pem" >"$BATS_TMPDIR/mk40-new.pem"
    openssl verify -CAfile "$BATS_TMPDIR/mk40-new.pem" "$MKUEUE_E2E_DIR/mk40-certs/tls.crt"
    bundles_match
    km delete ns "$ns" --wait=false
}

@test "self-managed certificates: uninstall removes the Secret the webhook filled" {
    stop_component mk40-webhook
    run helm_m uninstall "${REL}c" -n "$CNS"
    [ "$status" -eq 0 ]
    eventually 30 bash -c "! kubectl --context manager -n $CNS get secret ${REL}c-mkueue-webhook-tls >/dev/null 2>&1"
    [ -z "$(km get mutatingwebhookconfiguration,validatingwebhookconfiguration -l app.kubernetes.io/instance=${REL}c -o name)" ]
}
