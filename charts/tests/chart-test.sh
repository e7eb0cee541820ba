#!/usr/bin/env bash
# Chart tests: helm lint, then helm template with default and non-default
# values, converted to JSON (kubectl --local, no server) and checked with jq:
# RBAC verbs, webhook selectors and policies, every kind's rule and path
# (against the registry printed by build/chart-kinds), probes,
# securityContext, certificates modes. TAP output.
#
#   HELM=/path/to/helm KINDS_TOOL=build/chart-kinds charts/tests/chart-test.sh
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CHART=$(cd "$HERE/../mkueue" && pwd)
HELM=${HELM:-helm}
# the Kubernetes version rendered for (the test bed's; the chart needs 1.32+)
KUBE_VERSION=${KUBE_VERSION:-1.37.2}
KINDS_TOOL=${KINDS_TOOL:-build/chart-kinds}
NS=mk-sys
REL=rel
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; [ -z "${2:-}" ] || sed 's/^/# /' <<<"$2"; }

# render NAME [helm args...]: $TMP/NAME.json = array of rendered objects
render() {
    local name=$1; shift
    if ! "$HELM" template "$REL" "$CHART" -n "$NS" --kube-version "$KUBE_VERSION" "$@" >"$TMP/$name.yaml" 2>"$TMP/$name.err"; then
        not_ok "render $name" "$(cat "$TMP/$name.err")"
        echo '[]' >"$TMP/$name.json"
        return 1
    fi
    KUBECONFIG=/nonexistent kubectl annotate --local -f "$TMP/$name.yaml" -o json mkueue-none- \
        2>"$TMP/$name.err" | jq -s . >"$TMP/$name.json"
    if [ "${PIPESTATUS[0]}" != 0 ] || [ "$(jq length "$TMP/$name.json")" = 0 ]; then
        not_ok "parse $name" "$(cat "$TMP/$name.err")"
        return 1
    fi
    ok "render $name"
}

# check NAME DESCRIPTION JQ-FILTER [jq args...]: the filter is true on the objects
check() {
    local name=$1 desc=$2 filter=$3; shift 3
    local out
    if out=$(jq -e "$@" --argjson registry "$REGISTRY" --arg ns "$NS" "$DEFS $filter" \
        "$TMP/$name.json" 2>&1) && [ "$out" = true ]; then
        ok "$name: $desc"
    else
        not_ok "$name: $desc" "$out"
    fi
}

# render_fails NAME MESSAGE [helm args...]
render_fails() {
    local name=$1 msg=$2; shift 2
    if "$HELM" template "$REL" "$CHART" -n "$NS" --kube-version "$KUBE_VERSION" "$@" >/dev/null 2>"$TMP/$name.err"; then
        not_ok "$name: refused" "rendered without error"
    elif grep -q -- "$msg" "$TMP/$name.err"; then
        ok "$name: refused ($msg)"
    else
        not_ok "$name: refused with '$msg'" "$(cat "$TMP/$name.err")"
    fi
}

REGISTRY=$("$KINDS_TOOL" | jq -sc .) || { echo "Bail out! $KINDS_TOOL failed"; exit 1; }

# jq helpers shared by the checks
DEFS='
def obj(k; n): .[] | select(.kind == k and .metadata.name == n);
def kind(k): [.[] | select(.kind == k)];
def hooks(k): [.[] | select(.kind == k) | .webhooks[]];
def deploy(c): .[] | select(.kind == "Deployment" and .metadata.labels["app.kubernetes.io/component"] == c);
def rules(k; n): [obj(k; n) | .rules[] | {g: .apiGroups, r: .resources, v: (.verbs | sort), n: (.resourceNames // null)}];
def mut_ops(k): if (k == "Deployment" or k == "StatefulSet" or k == "LeaderWorkerSet") then ["CREATE","UPDATE"] else ["CREATE"] end;
def default_off: [];
def enabled(skip): [$registry[] | select(.kind as $k | (skip + default_off) | index($k) | not)];
def dispatched(skip): [enabled(skip)[] | select(.kind != "Deployment")];
def framework: if .group == "" or .group == "apps" then (.kind | ascii_downcase) else .group + "/" + (.kind | ascii_downcase) end;
def has_rule(rs; g; r; v): any(rs[]; .g == [g] and (.r | index(r)) and .v == (v | sort));
def no_wildcards: all(.[] | select(.kind == "ClusterRole" or .kind == "Role") | .rules[];
    (.verbs | index("*") | not) and (.resources | index("*") | not) and (.apiGroups | index("*") | not));
def selector_ok(ns):
    .namespaceSelector.matchExpressions as $m
    | any($m[]; .key == "kubernetes.io/metadata.name" and .operator == "NotIn"
          and (.values | sort) == ([ns, "kube-system"] | sort))
      and any($m[]; .key == "mkueue.x-k8s.io/webhook-exclude" and .operator == "DoesNotExist");
def hook_ok(kinds; verb; ops_of; policy; timeout; url):
    hooks(if verb == "mutate" then "MutatingWebhookConfiguration" else "ValidatingWebhookConfiguration" end) as $h
    | ($h | length) == (kinds | length)
      and all(kinds[] as $k | $h[] | select(.rules[0].resources == [$k.resource])
          | .admissionReviewVersions == ["v1"] and .sideEffects == "None"
          and .failurePolicy == policy and .timeoutSeconds == timeout
          and (.rules | length) == 1
          and .rules[0].apiGroups == [$k.group] and .rules[0].apiVersions == [$k.version]
          and .rules[0].operations == ($k.kind | ops_of) and .rules[0].scope == "Namespaced"
          and (if url == "" then .clientConfig.service.path == $k[verb]
                   and .clientConfig.service.name == "rel-mkueue-webhook"
                   and .clientConfig.service.namespace == $ns and .clientConfig.service.port == 443
                   and (.clientConfig.url | not)
               else .clientConfig.url == url + $k[verb] and (.clientConfig.service | not) end); .)
      and all(kinds[] as $k | [$h[] | select(.rules[0].resources == [$k.resource])] | length == 1)
      and ([$h[].name] | unique | length) == ($h | length);
def secure(c):
    deploy(c).spec.template.spec as $p
    | $p.securityContext.runAsNonRoot == true and $p.securityContext.seccompProfile.type == "RuntimeDefault"
      and all($p.containers[].securityContext;
          .runAsNonRoot == true and .readOnlyRootFilesystem == true
          and .allowPrivilegeEscalation == false and .capabilities.drop == ["ALL"]
          and .privileged == false and .seccompProfile.type == "RuntimeDefault");
def probes(c; port):
    deploy(c).spec.template.spec.containers[0] as $c
    | $c.livenessProbe.httpGet == {path: "/healthz", port: port}
      and $c.readinessProbe.httpGet == {path: "/readyz", port: port}
      and $c.startupProbe.httpGet == {path: "/healthz", port: port}
      and any($c.ports[]; .name == port);
def args(c): deploy(c).spec.template.spec.containers[0].args;
def pod_based: ["pods","deployments","statefulsets","leaderworkersets"];
def is_pod_based: (.rules[0].resources[0] as $r | pod_based | index($r)) != null;
def queue_selector: .objectSelector == {matchExpressions: [{key: "kueue.x-k8s.io/queue-name", operator: "Exists"}]};
def netpol(c): .[] | select(.kind == "NetworkPolicy" and .metadata.labels["app.kubernetes.io/component"] == c);
'

echo "# helm $("$HELM" version --short)"

# ---- lint -------------------------------------------------------------------------
if out=$("$HELM" lint --strict --kube-version "$KUBE_VERSION" "$CHART" 2>&1); then ok "helm lint --strict"; else not_ok "helm lint --strict" "$out"; fi
for f in "$CHART"/values-examples/*.yaml; do
    if out=$("$HELM" lint --strict --kube-version "$KUBE_VERSION" "$CHART" -f "$f" 2>&1); then ok "helm lint $(basename "$f")"
    else not_ok "helm lint $(basename "$f")" "$out"; fi
    render "example-$(basename "$f" .yaml)" -f "$f"
done

# ---- defaults -----------------------------------------------------------------------
render default
D=default
check $D "the enabled kinds are the registry's" \
    '([hooks("MutatingWebhookConfiguration")[].rules[0] | .apiGroups[0] + "/" + .resources[0]] | sort)
     == ([enabled([])[] | .group + "/" + .resource] | sort)'
check $D "mutating webhooks: one per kind, rule, path, v1, None, Fail, 10s" \
    'hook_ok(enabled([]); "mutate"; mut_ops(.); "Fail"; 10; "")'
check $D "validating webhooks: one per kind, CREATE+UPDATE, path, v1, None, Fail, 10s" \
    'hook_ok(enabled([]); "validate"; ["CREATE","UPDATE"]; "Fail"; 10; "")'
check $D "namespaceSelector excludes kube-system and the release namespace, opt-out label" \
    'all(hooks("MutatingWebhookConfiguration")[], hooks("ValidatingWebhookConfiguration")[]; selector_ok($ns))'
check $D "validating webhooks see only objects with the queue label (objectSelector Exists)" \
    'all(hooks("ValidatingWebhookConfiguration")[]; queue_selector)'
check $D "mutating webhooks have no objectSelector (the default LocalQueue labels unlabelled jobs)" \
    'all(hooks("MutatingWebhookConfiguration")[]; .objectSelector == null)'
check $D "pod-based kinds only in opted-in namespaces (managedJobsNamespaceSelector), the others in all" \
    '[hooks("MutatingWebhookConfiguration")[], hooks("ValidatingWebhookConfiguration")[]] as $h
     | ([$h[] | select(is_pod_based)] | length) == 8
     and all($h[] | select(is_pod_based); .namespaceSelector.matchLabels == {"kueue.x-k8s.io/managed-namespace": "true"}
             and selector_ok($ns))
     and all($h[] | select(is_pod_based | not); .namespaceSelector.matchLabels == null)'
check $D "NetworkPolicy: webhook HTTPS port from any source (the apiserver), metrics from the monitoring namespace" \
    'netpol("webhook").spec as $s | $s.policyTypes == ["Ingress"]
     and $s.podSelector.matchLabels == deploy("webhook").spec.selector.matchLabels
     and ($s.ingress | length) == 2
     and $s.ingress[0] == {ports: [{protocol: "TCP", port: 9443}]}
     and $s.ingress[1] == {ports: [{protocol: "TCP", port: 8080}],
                           from: [{namespaceSelector: {matchLabels: {"kubernetes.io/metadata.name": "monitoring"}}}]}'
check $D "NetworkPolicy: reconciler admits only metrics from the monitoring namespace" \
    'netpol("reconciler").spec as $s | $s.policyTypes == ["Ingress"]
     and $s.podSelector.matchLabels == deploy("reconciler").spec.selector.matchLabels
     and $s.ingress == [{ports: [{protocol: "TCP", port: 8080}],
                         from: [{namespaceSelector: {matchLabels: {"kubernetes.io/metadata.name": "monitoring"}}}]}]
     and (kind("NetworkPolicy") | length) == 2'
check $D "no caBundle rendered without a cluster (self-managed patches it)" \
    'all(hooks("MutatingWebhookConfiguration")[]; .clientConfig.caBundle | not)'
check $D "RBAC has no wildcards" 'no_wildcards'
check $D "webhook ClusterRole: read queues/checks/clusters, patch its own configurations only" \
    'rules("ClusterRole"; "rel-mkueue-webhook") as $r | ($r | length) == 3
     and has_rule($r; "kueue.x-k8s.io"; "localqueues"; ["get","list","watch"])
     and ($r[0].r | sort) == (["admissionchecks","clusterqueues","localqueues","multikueueclusters","multikueueconfigs"])
     and any($r[]; .r == ["mutatingwebhookconfigurations"] and .n == ["rel-mkueue-mutating"] and .v == ["get","patch","update"])
     and any($r[]; .r == ["validatingwebhookconfigurations"] and .n == ["rel-mkueue-validating"] and .v == ["get","patch","update"])'
check $D "webhook Role: no kubeconfig Secrets by default, create + get/update its certificate Secret by name" \
    'rules("Role"; "rel-mkueue-webhook") as $r | ($r | length) == 2
     and all($r[]; (.v | index("list") | not) and (.v | index("watch") | not))
     and any($r[]; .r == ["secrets"] and .v == ["create"] and .n == null)
     and any($r[]; .r == ["secrets"] and .v == ["get","update"] and .n == ["rel-mkueue-webhook-tls"])'
check $D "a Deployment's pods are dispatched as Pods: pods in the reconciler's RBAC, no Deployments" \
    'all(kind("ClusterRole")[].rules[].resources[]; test("^deployments") | not)
     and has_rule(rules("ClusterRole"; "rel-mkueue-reconciler"); ""; "pods/status"; ["get","update","patch"])'
check $D "standalone: the reconciler may delete pods (a pod group's excess), nothing else it may delete but Workloads" \
    'rules("ClusterRole"; "rel-mkueue-reconciler") as $r
     | has_rule($r; ""; "pods"; ["delete"])
     and all($r[]; (.v | index("delete") | not) or .r == ["pods"] or .r == ["workloads"])'
check $D "no ClusterRole touches secrets or leases" \
    'all(kind("ClusterRole")[].rules[]; (.resources | index("secrets") | not) and (.resources | index("leases") | not))'
check $D "reconciler ClusterRole: every dispatched kind get/list/watch/update/patch + status + finalizers" \
    'rules("ClusterRole"; "rel-mkueue-reconciler") as $r
     | (dispatched([]) | length) == 16
     and all(dispatched([])[]; . as $k | has_rule($r; $k.group; $k.resource; ["get","list","watch","update","patch"])
         and has_rule($r; $k.group; $k.resource + "/status"; ["get","update","patch"])
         and has_rule($r; $k.group; $k.resource + "/finalizers"; ["update"]))'
check $D "reconciler ClusterRole: workloads all verbs, checks/clusters status, queues and WorkloadPriorityClasses read, events" \
    'rules("ClusterRole"; "rel-mkueue-reconciler") as $r
     | has_rule($r; "kueue.x-k8s.io"; "workloads"; ["get","list","watch","create","update","patch","delete"])
     and has_rule($r; "kueue.x-k8s.io"; "workloads/status"; ["get","update","patch"])
     and has_rule($r; "kueue.x-k8s.io"; "admissionchecks/status"; ["get","update","patch"])
     and has_rule($r; "kueue.x-k8s.io"; "multikueueclusters/status"; ["get","update","patch"])
     and has_rule($r; "kueue.x-k8s.io"; "multikueueconfigs"; ["get","list","watch"])
     and has_rule($r; "kueue.x-k8s.io"; "clusterqueues"; ["get","list","watch"])
     and has_rule($r; "kueue.x-k8s.io"; "workloadpriorityclasses"; ["get","list","watch"])
     and has_rule($r; ""; "events"; ["create","patch"])
     and ([$r[] | select(.g == ["kueue.x-k8s.io"] and (.r | index("localqueues")))] | .[0].v) == ["get","list","watch"]'
check $D "reconciler ClusterRole: nothing beyond kinds, Kueue objects, priority classes and events" \
    '([dispatched([])[] | .resource, .resource + "/status", .resource + "/finalizers"]
      + ["workloads","workloads/status","workloads/finalizers","admissionchecks","admissionchecks/status",
         "multikueueclusters","multikueueclusters/status","localqueues","clusterqueues","multikueueconfigs",
         "localqueues/status","clusterqueues/status",
         "priorityclasses","workloadpriorityclasses","events"]) as $allowed
     | all(rules("ClusterRole"; "rel-mkueue-reconciler")[].r[]; . as $x | $allowed | index($x) != null)'
check $D "reconciler Role: leases create + get/update by name, no secrets by default" \
    'rules("Role"; "rel-mkueue-reconciler") as $r | ($r | length) == 2
     and any($r[]; .g == ["coordination.k8s.io"] and .v == ["create"] and .n == null)
     and any($r[]; .g == ["coordination.k8s.io"] and .v == ["get","update"] and .n == ["rel-mkueue-reconciler"])
     and all($r[]; .r | index("secrets") | not)'
render kubeconfigs --set 'workerKubeconfigs.secretNames={worker-1,worker-2}'
check kubeconfigs "kubeconfig Secrets: get by name only, in both Roles; the certificate Secret not in the reconciler's" \
    '(rules("Role"; "rel-mkueue-reconciler") | map(select(.r == ["secrets"]))) as $rc
     | (rules("Role"; "rel-mkueue-webhook") | map(select(.r == ["secrets"] and .n == ["worker-1","worker-2"]))) as $wh
     | ($rc | length) == 1 and $rc[0].v == ["get"] and $rc[0].n == ["worker-1","worker-2"]
     and ($wh | length) == 1 and $wh[0].v == ["get"]'
check $D "bindings give each ServiceAccount its own roles" \
    '[.[] | select(.kind | test("Binding$")) | {r: .roleRef.name, s: .subjects[0].name, ns: .subjects[0].namespace}]
     | length == 4 and all(.[]; .r == .s and .ns == $ns)'
check $D "separate ServiceAccounts, used by their Deployments" \
    '(kind("ServiceAccount") | map(.metadata.name) | sort) == ["rel-mkueue-reconciler","rel-mkueue-webhook"]
     and deploy("webhook").spec.template.spec.serviceAccountName == "rel-mkueue-webhook"
     and deploy("reconciler").spec.template.spec.serviceAccountName == "rel-mkueue-reconciler"'
check $D "both Deployments: 2 replicas, spread over nodes, resources with limits" \
    'all(deploy("webhook"), deploy("reconciler"); .spec.replicas == 2
       and .spec.template.spec.topologySpreadConstraints[0].topologyKey == "kubernetes.io/hostname"
       and .spec.template.spec.topologySpreadConstraints[0].labelSelector.matchLabels == .spec.selector.matchLabels
       and .spec.template.spec.containers[0].resources.limits.memory != null
       and .spec.template.spec.containers[0].resources.requests.cpu != null)'
check $D "webhook memory limit covers its caps (values.yaml), reconciler above 50 MiB" \
    '(deploy("webhook").spec.template.spec.containers[0].resources.limits.memory == "96Mi")
     and (deploy("reconciler").spec.template.spec.containers[0].resources.limits.memory == "128Mi")'
check $D "probes on /healthz and /readyz (webhook: probe listener; reconciler: metrics port)" \
    'probes("webhook"; "health") and probes("reconciler"; "metrics")
     and (args("webhook") | index("--health-port=8081") != null
          and index("--max-connections-per-ip=64") != null
          and index("--max-inflight-bytes=50331648") != null)'
check $D "securityContext: non-root, read-only root, no capabilities, RuntimeDefault, no escalation" \
    'secure("webhook") and secure("reconciler")'
check $D "no priorityClassName by default" \
    'all(deploy("webhook"), deploy("reconciler"); .spec.template.spec.priorityClassName == null)'
check $D "PDBs (minAvailable 1) select their Deployment's pods" \
    'deploy("webhook").spec.selector.matchLabels as $w | deploy("reconciler").spec.selector.matchLabels as $r
     | [kind("PodDisruptionBudget")[] | .spec] as $p | ($p | length) == 2
     and all($p[]; .minAvailable == 1)
     and ($p | map(.selector.matchLabels) | sort) == ([$w, $r] | sort) and $w != $r'
check $D "webhook Service targets the HTTPS port of the webhook pods" \
    'obj("Service"; "rel-mkueue-webhook").spec as $s
     | $s.ports[0].port == 443 and $s.ports[0].targetPort == "https"
     and $s.selector == deploy("webhook").spec.selector.matchLabels'
check $D "metrics Service covers both components" \
    'deploy("webhook").spec.template.metadata.labels as $w | deploy("reconciler").spec.template.metadata.labels as $r
     | obj("Service"; "rel-mkueue-metrics").spec as $s | $s.ports[0].targetPort == "metrics"
     and ($s.selector | to_entries | all(.[]; $w[.key] == .value and $r[.key] == .value))'
check $D "self-managed: emptyDir certs, flags name the Secret, Service and configurations" \
    'args("webhook") as $a
     | ($a | index("--cert-dir=/var/run/mkueue/certs")) and ($a | index("--cert-secret=rel-mkueue-webhook-tls"))
     and ($a | index("--cert-service=rel-mkueue-webhook")) and ($a | index("--mutating-config=rel-mkueue-mutating"))
     and ($a | index("--validating-config=rel-mkueue-validating")) and ($a | index("--namespace=" + $ns))
     and (deploy("webhook").spec.template.spec.volumes[] | select(.name == "certs") | .emptyDir.medium == "Memory")
     and (obj("Secret"; "rel-mkueue-webhook-tls") | .type == "Opaque" and (.data | not))
     and ([$a[] | select(startswith("--tls-"))] | length) == 0'
check $D "reconciler config: mode, origin, leader election lease, enabled kinds, 8 threads, Kueue's names" \
    'obj("ConfigMap"; "rel-mkueue-reconciler").data["config.yaml"] as $c
     | ($c | test("(?m)^mode: standalone$")) and ($c | test("(?m)^origin: \"multikueue\"$"))
     and ($c | test("(?m)^  leaseName: rel-mkueue-reconciler$"))
     and ([$c | scan("(?m)^- (.*)$")[0]] == [dispatched([])[] | framework])
     and ($c | test("(?m)^  leaderElect: true$"))
      and ($c | test("deployment|externalFrameworks") | not)
      and ($c | test("(?m)^- ray.io/rayservice$"))
     and ($c | test("(?m)^namespace: " + $ns + "$"))
     and ($c | test("(?m)^workers: 8$"))
     and ($c | test("(?m)^shortWorkloadNames: false$"))
     and (args("reconciler") == ["--config=/etc/mkueue/config/config.yaml"])
     and (deploy("reconciler").spec.template.metadata.annotations["checksum/config"] | length) == 16'
check $D "image from the chart's appVersion" \
    'deploy("webhook").spec.template.spec.containers[0].image == "ghcr.io/mkueue/mkueue:0.1.0"
     and deploy("webhook").spec.template.spec.containers[0].imagePullPolicy == "IfNotPresent"'
check $D "no ServiceMonitor, Certificate or Issuer by default" \
    'all(.[]; .kind != "ServiceMonitor" and .kind != "Certificate" and .kind != "Issuer")'

# ---- non-default values ------------------------------------------------------------------
render custom --set kinds.Pod=false --set kinds.Deployment=false --set kinds.RayService=false \
    --set webhook.failurePolicy=Ignore --set webhook.timeoutSeconds=5 \
    --set webhook.url=https://127.0.0.1:18443 --set webhook.namespaceSelector.matchByName=false \
    --set-string 'webhook.namespaceSelector.releaseNamespaceLabels.mkueue\.x-k8s\.io/webhook-exclude=true' \
    --set webhook.priorityClassName=system-cluster-critical --set reconciler.priorityClassName=high \
    --set image.tag=v9 --set image.pullPolicy=Always --set reconciler.leaderElection.enabled=false \
    --set webhook.replicas=3 --set 'webhook.nodeSelector.role=infra' \
    --set 'webhook.tolerations[0].key=infra' --set 'webhook.tolerations[0].operator=Exists' \
    --set kinds.JobSet=false --set reconciler.mode=with-kueue --set reconciler.dispatcher=Incremental \
    --set certificates.selfManaged.extraSANs='{localhost}' --set webhook.pdb.enabled=false
C=custom
check $C "with-kueue or without Pods: the reconciler deletes no pods (Kueue removes a group's excess)" \
    'rules("ClusterRole"; "rel-mkueue-reconciler") as $r | has_rule($r; ""; "pods"; ["delete"]) | not'
check $C "kinds switched off lose their webhooks; the rest point at webhook.url; Ignore, 5s" \
    'hook_ok(enabled(["Pod","Deployment","JobSet","RayService"]); "mutate"; mut_ops(.); "Ignore"; 5; "https://127.0.0.1:18443")
     and hook_ok(enabled(["Pod","Deployment","JobSet","RayService"]); "validate"; ["CREATE","UPDATE"]; "Ignore"; 5; "https://127.0.0.1:18443")'
check $C "matchByName off: only the opt-out label" \
    'all(hooks("MutatingWebhookConfiguration")[]; .namespaceSelector.matchExpressions
         == [{key: "mkueue.x-k8s.io/webhook-exclude", operator: "DoesNotExist"}])'
check $C "a kind switched off leaves the reconciler's RBAC and integrations" \
    'all(rules("ClusterRole"; "rel-mkueue-reconciler")[]; .r | map(startswith("jobsets")) | any | not)
     and (obj("ConfigMap"; "rel-mkueue-reconciler").data["config.yaml"] as $c
          | ($c | test("jobset") | not) and ($c | test("(?m)^mode: with-kueue$"))
          and ($c | test("(?m)^dispatcher: Incremental$")) and ($c | test("(?m)^  leaderElect: false$")))'
check $C "leader election off: no lease rules" \
    'all(rules("Role"; "rel-mkueue-reconciler")[]; .g != ["coordination.k8s.io"])'
check $C "priorityClassName, image, replicas, nodeSelector, tolerations" \
    'deploy("webhook").spec.template.spec.priorityClassName == "system-cluster-critical"
     and deploy("reconciler").spec.template.spec.priorityClassName == "high"
     and deploy("webhook").spec.template.spec.containers[0].image == "ghcr.io/mkueue/mkueue:v9"
     and deploy("reconciler").spec.template.spec.containers[0].imagePullPolicy == "Always"
     and deploy("webhook").spec.replicas == 3 and deploy("webhook").spec.template.spec.nodeSelector.role == "infra"
     and deploy("webhook").spec.template.spec.tolerations[0].key == "infra"'
check $C "the URL host joins the certificate SANs; webhook PDB off" \
    '(args("webhook") | index("--cert-sans=localhost,127.0.0.1")) != null
     and ([kind("PodDisruptionBudget")[].metadata.name] == ["rel-mkueue-reconciler"])'

render certmanager --set certificates.mode=cert-manager
C=certmanager
check $C "Certificate with the Service names, self-signed Issuer, inject-ca-from on both" \
    'obj("Certificate"; "rel-mkueue-webhook").spec as $c
     | $c.secretName == "rel-mkueue-webhook-tls"
     and ($c.dnsNames | sort) == (["rel-mkueue-webhook", "rel-mkueue-webhook." + $ns, "rel-mkueue-webhook." + $ns + ".svc",
                                   "rel-mkueue-webhook." + $ns + ".svc.cluster.local"] | sort)
     and $c.issuerRef.name == "rel-mkueue-webhook-selfsigned" and obj("Issuer"; "rel-mkueue-webhook-selfsigned").spec.selfSigned == {}
     and all(obj("MutatingWebhookConfiguration"; "rel-mkueue-mutating"), obj("ValidatingWebhookConfiguration"; "rel-mkueue-validating");
             .metadata.annotations["cert-manager.io/inject-ca-from"] == $ns + "/rel-mkueue-webhook")'
check $C "the webhook reads the Secret; it may not patch configurations nor write secrets" \
    '(args("webhook") | index("--tls-cert=/var/run/mkueue/certs/tls.crt")) != null
     and (args("webhook") | map(select(startswith("--cert-"))) | length) == 0
     and (deploy("webhook").spec.template.spec.volumes[] | select(.name == "certs") | .secret.secretName == "rel-mkueue-webhook-tls")
     and all(rules("ClusterRole"; "rel-mkueue-webhook")[]; .g == ["kueue.x-k8s.io"])
     and all(rules("Role"; "rel-mkueue-webhook")[]; .v == ["get","list","watch"])
     and ([.[] | select(.kind == "Secret")] | length) == 0'
render certmanager-issuer --set certificates.mode=cert-manager \
    --set certificates.certManager.issuerRef.name=corp-ca --set certificates.certManager.issuerRef.kind=ClusterIssuer
check certmanager-issuer "an existing issuer: no Issuer rendered" \
    '(kind("Issuer") | length) == 0 and obj("Certificate"; "rel-mkueue-webhook").spec.issuerRef == {name: "corp-ca", kind: "ClusterIssuer"}'

render ownsecret --set certificates.mode=secret --set certificates.secret.name=my-tls \
    --set certificates.secret.caBundle=Q0EK
check ownsecret "own Secret mounted, caBundle in every webhook" \
    'all(hooks("MutatingWebhookConfiguration")[], hooks("ValidatingWebhookConfiguration")[]; .clientConfig.caBundle == "Q0EK")
     and (deploy("webhook").spec.template.spec.volumes[] | select(.name == "certs") | .secret.secretName == "my-tls")
     and ([.[] | select(.kind == "Secret" or .kind == "Certificate")] | length) == 0'

render monitoring --set serviceMonitor.enabled=true --set serviceMonitor.labels.release=prom
check monitoring "ServiceMonitor selects the metrics Service" \
    'obj("ServiceMonitor"; "rel-mkueue") as $m | obj("Service"; "rel-mkueue-metrics") as $s
     | ($m.spec.selector.matchLabels | to_entries | all(.[]; $s.metadata.labels[.key] == .value))
     and $m.spec.endpoints[0].port == "metrics" and $m.metadata.labels.release == "prom"
     and $m.spec.namespaceSelector.matchNames == [$ns]'

render external --set webhook.deploy=false --set reconciler.deploy=false
check external "deploy=false: no Deployments or PDBs; configurations, RBAC, config stay" \
    '([.[] | select(.kind == "Deployment" or .kind == "PodDisruptionBudget")] | length) == 0
     and (kind("MutatingWebhookConfiguration") | length) == 1 and (kind("ClusterRole") | length) == 2
     and (kind("ConfigMap") | length) == 1'

render nokinds --set kinds.Job=false --set kinds.Pod=false --set kinds.Deployment=false \
    --set kinds.StatefulSet=false --set kinds.JobSet=false --set kinds.PyTorchJob=false \
    --set kinds.TFJob=false --set kinds.XGBoostJob=false --set kinds.PaddleJob=false \
    --set kinds.JAXJob=false --set kinds.MPIJob=false --set kinds.TrainJob=false \
    --set kinds.RayJob=false --set kinds.RayCluster=false --set kinds.RayService=false \
    --set kinds.AppWrapper=false --set kinds.LeaderWorkerSet=false
check nokinds "no kind: empty webhook lists" \
    '(hooks("MutatingWebhookConfiguration") | length) == 0 and (hooks("ValidatingWebhookConfiguration") | length) == 0'

render_fails badkind 'kinds.Foo: unknown job kind' --set kinds.Foo=true

# external frameworks: webhooks, RBAC, both binaries' configuration
render extfw --set 'externalFrameworks[0].name=MyJob.v1.example.com' \
    --set 'externalFrameworks[1].name=Pipe.v1beta1.tekton.dev' \
    --set 'externalFrameworks[1].resource=pipez' --set 'externalFrameworks[1].podTemplatePath=spec.pod'
X='[{kind: "MyJob", group: "example.com", version: "v1", resource: "myjobs",
     mutate: "/mutate-example-com-v1-myjob", validate: "/validate-example-com-v1-myjob"},
    {kind: "Pipe", group: "tekton.dev", version: "v1beta1", resource: "pipez",
     mutate: "/mutate-tekton-dev-v1beta1-pipe", validate: "/validate-tekton-dev-v1beta1-pipe"}]'
check extfw "external kinds get a mutating and a validating webhook each, at Kueue's paths" \
    "($X) as \$x | hook_ok(enabled([]) + \$x; \"mutate\"; mut_ops(.); \"Fail\"; 10; \"\")
     and hook_ok(enabled([]) + \$x; \"validate\"; [\"CREATE\",\"UPDATE\"]; \"Fail\"; 10; \"\")"
check extfw "external kinds in the reconciler's RBAC, not in its integrations; both binaries told" \
    'rules("ClusterRole"; "rel-mkueue-reconciler") as $r
     | has_rule($r; "example.com"; "myjobs"; ["get","list","watch","update","patch"])
     and has_rule($r; "tekton.dev"; "pipez/status"; ["get","update","patch"])
     and (args("webhook") | index("--external-frameworks=MyJob.v1.example.com,Pipe.v1beta1.tekton.dev;resource=pipez;podTemplatePath=spec.pod"))
     and (obj("ConfigMap"; "rel-mkueue-reconciler").data["config.yaml"] as $c
          | ($c | test("example.com/myjob") | not)
          and ($c | test("(?m)^externalFrameworks:\n- \\{\"name\":\"MyJob.v1.example.com\"\\}$")))'
render_fails extfw-builtin 'externalFrameworks: "Job.v1.batch" is not Kind.version.group of a kind not built in' \
    --set 'externalFrameworks[0].name=Job.v1.batch'
render_fails extfw-bad 'is not Kind.version.group' --set 'externalFrameworks[0].name=Foo'
render_fails nosecret 'certificates.secret.name is required' --set certificates.mode=secret
render_fails oldkube 'chart requires kubeVersion: >=1.32.0-0 which is incompatible with Kubernetes v1.31.0' --kube-version 1.31.0
render_fails badmode 'certificates.mode must be one of' --set certificates.mode=vault
render_fails badpolicy 'failurePolicy must be Fail or Ignore' --set webhook.failurePolicy=Maybe
render_fails badtimeout 'timeoutSeconds must be 1 to 30' --set webhook.timeoutSeconds=31
render_fails httpurl 'must start with https://' --set webhook.url=http://127.0.0.1:1
render netpol --set networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.10/32 \
    --set networkPolicy.monitoringNamespaceSelector.matchLabels.team=obs \
    --set 'webhook.managedJobsNamespaceSelector=null'
check netpol "webhookFrom narrows the HTTPS port; the monitoring selector is the values'" \
    'netpol("webhook").spec.ingress[0].from == [{ipBlock: {cidr: "10.0.0.10/32"}}]
     and all(netpol("webhook").spec.ingress[1], netpol("reconciler").spec.ingress[0];
             .from == [{namespaceSelector: {matchLabels: {"kubernetes.io/metadata.name": "monitoring", team: "obs"}}}])'
check netpol "managedJobsNamespaceSelector null: pod-based kinds in every admitted namespace" \
    'all(hooks("MutatingWebhookConfiguration")[]; .namespaceSelector.matchLabels == null and selector_ok($ns))'
render nonetpol --set networkPolicy.enabled=false
check nonetpol "networkPolicy.enabled=false: no NetworkPolicy" '(kind("NetworkPolicy") | length) == 0'

# the webhooks must never select their own namespace (they would block their own restart)
render_fails ownns-optout-only 'the Job webhooks would select the release namespace mk-sys' \
    --set webhook.namespaceSelector.matchByName=false
render_fails ownns-no-name-label 'would select the release namespace mk-sys (labels {"team":"x"})' \
    --set webhook.namespaceSelector.releaseNamespaceLabels.team=x
render_fails ownns-pods-only 'the Pod webhooks would select the release namespace' \
    --set kinds.Job=false --set webhook.namespaceSelector.matchByName=false \
    --set-string 'webhook.namespaceSelector.releaseNamespaceLabels.kueue\.x-k8s\.io/managed-namespace=true'
render_fails noexclusion 'enable matchByName or set optOutLabel' \
    --set webhook.namespaceSelector.matchByName=false --set webhook.namespaceSelector.optOutLabel=

echo "1..$n"
[ $failed = 0 ]
