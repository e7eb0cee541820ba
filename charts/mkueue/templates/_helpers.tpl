{{/* Names ------------------------------------------------------------------- */}}

{{- define "mkueue.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mkueue.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "mkueue.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "mkueue.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mkueue.webhookName" -}}{{ include "mkueue.fullname" . | trunc 55 | trimSuffix "-" }}-webhook{{- end -}}
{{- define "mkueue.reconcilerName" -}}{{ include "mkueue.fullname" . | trunc 52 | trimSuffix "-" }}-reconciler{{- end -}}
{{- define "mkueue.mutatingName" -}}{{ include "mkueue.fullname" . | trunc 54 | trimSuffix "-" }}-mutating{{- end -}}
{{- define "mkueue.validatingName" -}}{{ include "mkueue.fullname" . | trunc 52 | trimSuffix "-" }}-validating{{- end -}}
{{- define "mkueue.metricsName" -}}{{ include "mkueue.fullname" . | trunc 55 | trimSuffix "-" }}-metrics{{- end -}}

{{- define "mkueue.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "secret" -}}
{{- required "certificates.secret.name is required when certificates.mode is secret" .Values.certificates.secret.name -}}
{{- else -}}
{{- default (printf "%s-tls" (include "mkueue.webhookName" .)) .Values.certificates.secretName -}}
{{- end -}}
{{- end -}}

{{- define "mkueue.leaseName" -}}
{{- default (include "mkueue.reconcilerName" .) .Values.reconciler.leaderElection.leaseName -}}
{{- end -}}

{{/* Labels ------------------------------------------------------------------- */}}

{{- define "mkueue.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "mkueue.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mkueue
{{- end -}}

{{/* selector labels of one component: include "mkueue.selector" (list . "webhook") */}}
{{- define "mkueue.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "mkueue.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "mkueue.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{/* Job kinds ----------------------------------------------------------------
     The kinds mkueue handles (common/kinds/registry.c), in registry order.
     mutateUpdate: the mutating webhook also sees UPDATE (docs/multikueue-compat.md
     section 5.1). podBased: the webhooks are scoped by
     webhook.managedJobsNamespaceSelector too. dispatch: false for the kinds
     the reconciler does not dispatch yet (it refuses them as integrations):
     no reconciler RBAC or integration for them; viaPods: the kind is not
     dispatched itself, its pods are (as Pods). integration: Kueue's
     framework name when it is not <group>/<lower kind>. */}}
{{- define "mkueue.kindTable" -}}
kinds:
- {kind: Job, group: batch, version: v1, resource: jobs}
- {kind: Pod, group: "", version: v1, resource: pods, podBased: true, integration: pod}
- {kind: Deployment, group: apps, version: v1, resource: deployments, mutateUpdate: true, podBased: true, dispatch: false, viaPods: true}
- {kind: StatefulSet, group: apps, version: v1, resource: statefulsets, mutateUpdate: true, podBased: true, integration: statefulset}
- {kind: JobSet, group: jobset.x-k8s.io, version: v1alpha2, resource: jobsets}
- {kind: PyTorchJob, group: kubeflow.org, version: v1, resource: pytorchjobs}
- {kind: TFJob, group: kubeflow.org, version: v1, resource: tfjobs}
- {kind: XGBoostJob, group: kubeflow.org, version: v1, resource: xgboostjobs}
- {kind: PaddleJob, group: kubeflow.org, version: v1, resource: paddlejobs}
- {kind: JAXJob, group: kubeflow.org, version: v1, resource: jaxjobs}
- {kind: MPIJob, group: kubeflow.org, version: v2beta1, resource: mpijobs}
- {kind: TrainJob, group: trainer.kubeflow.org, version: v1alpha1, resource: trainjobs}
- {kind: RayJob, group: ray.io, version: v1, resource: rayjobs}
- {kind: RayCluster, group: ray.io, version: v1, resource: rayclusters}
- {kind: RayService, group: ray.io, version: v1, resource: rayservices}
- {kind: AppWrapper, group: workload.codeflare.dev, version: v1beta2, resource: appwrappers}
- {kind: LeaderWorkerSet, group: leaderworkerset.x-k8s.io, version: v1, resource: leaderworkersets, mutateUpdate: true, podBased: true}
{{- end -}}

{{/* The enabled kinds as YAML `kinds: [...]`; fails on a name the table lacks. */}}
{{- define "mkueue.enabledKinds" -}}
{{- $table := (include "mkueue.kindTable" . | fromYaml).kinds -}}
{{- $known := dict -}}
{{- range $table }}{{ $_ := set $known .kind true }}{{ end -}}
{{- range $name, $on := .Values.kinds }}
{{- if not (hasKey $known $name) }}
{{- fail (printf "kinds.%s: unknown job kind (known: %s)" $name (keys $known | sortAlpha | join ", ")) }}
{{- end }}
{{- end -}}
{{- if and .Values.kinds.Deployment (not .Values.kinds.Pod) }}
{{- fail "kinds.Deployment needs kinds.Pod: a Deployment's pods are dispatched as Pods (Kueue's deployment integration depends on pod too)" }}
{{- end -}}
kinds:
{{- range $table }}
{{- if index $.Values.kinds .kind }}
- {{ toJson . }}
{{- end }}
{{- end }}
{{- range .Values.externalFrameworks }}
{{- $p := splitn "." 3 (required "externalFrameworks[].name is required" .name) }}
{{- if or (not $p._1) (not $p._2) (hasKey $known $p._0) }}
{{- fail (printf "externalFrameworks: %q is not Kind.version.group of a kind not built in (e.g. PipelineRun.v1.tekton.dev)" .name) }}
{{- end }}
- {{ toJson (dict "kind" $p._0 "version" $p._1 "group" $p._2 "resource" (.resource | default (printf "%ss" (lower $p._0))) "external" (include "mkueue.externalSpec" .)) }}
{{- end }}
{{- end -}}

{{/* An external framework as both binaries take it (common/kinds/kinds.h):
     Kind.version.group[;resource=R][;podTemplatePath=P][;countPath=C] */}}
{{- define "mkueue.externalSpec" -}}
{{ .name }}
{{- range $k := list "resource" "podTemplatePath" "countPath" }}
{{- with index $ $k }};{{ $k }}={{ . }}{{ end }}
{{- end }}
{{- end -}}

{{/* Kueue's webhook path: /<verb>-<group with dots as dashes>-<version>-<lower kind> */}}
{{- define "mkueue.webhookPath" -}}
/{{ index . 0 }}-{{ (index . 1).group | replace "." "-" }}-{{ (index . 1).version }}-{{ (index . 1).kind | lower }}
{{- end -}}

{{/* clientConfig of one webhook: include "mkueue.clientConfig" (list $ path) */}}
{{- define "mkueue.clientConfig" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
{{- if $root.Values.webhook.url }}
url: {{ printf "%s%s" (trimSuffix "/" $root.Values.webhook.url) $path | quote }}
{{- else }}
service:
  name: {{ include "mkueue.webhookName" $root }}
  namespace: {{ $root.Release.Namespace }}
  path: {{ $path | quote }}
  port: {{ $root.Values.webhook.service.port }}
{{- end }}
{{- $ca := include "mkueue.caBundle" $root }}
{{- if $ca }}
caBundle: {{ $ca }}
{{- end }}
{{- end -}}

{{/* caBundle known at render time: own Secret mode's value, or (self-managed)
     the bundle the webhook already stored, so that an upgrade that adds a kind
     does not leave its entry without a CA until the webhook patches it. */}}
{{- define "mkueue.caBundle" -}}
{{- if eq .Values.certificates.mode "secret" -}}
{{- .Values.certificates.secret.caBundle -}}
{{- else if eq .Values.certificates.mode "self-managed" -}}
{{- $s := lookup "v1" "Secret" .Release.Namespace (include "mkueue.tlsSecretName" .) -}}
{{- if and $s $s.data -}}{{- index $s.data "ca.crt" | default "" -}}{{- end -}}
{{- end -}}
{{- end -}}

{{- define "mkueue.namespaceSelector" -}}
{{- $ns := .Values.webhook.namespaceSelector -}}
{{- $excluded := concat (list .Release.Namespace) ($ns.excludeNamespaces | default list) | uniq -}}
matchExpressions:
{{- if $ns.matchByName }}
- key: kubernetes.io/metadata.name
  operator: NotIn
  values: {{ toJson $excluded }}
{{- end }}
{{- if $ns.optOutLabel }}
- key: {{ $ns.optOutLabel }}
  operator: DoesNotExist
{{- end }}
{{- with $ns.matchExpressions }}
{{ toYaml . }}
{{- end }}
{{- with $ns.matchLabels }}
matchLabels:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The namespaceSelector of one kind's webhooks: include
     "mkueue.namespaceSelectorFor" (list $ kind). The pod-based kinds
     (podBased: Pod, Deployment, StatefulSet, LeaderWorkerSet) also
     need the namespace to match webhook.managedJobsNamespaceSelector, as
     Kueue's managedJobsNamespaceSelector scopes its pod-based integrations. */}}
{{- define "mkueue.namespaceSelectorFor" -}}
{{- $root := index . 0 -}}
{{- $kind := index . 1 -}}
{{- $base := include "mkueue.namespaceSelector" $root | fromYaml -}}
{{- $exprs := $base.matchExpressions | default list -}}
{{- $labels := $base.matchLabels | default dict -}}
{{- if $kind.podBased -}}
{{- $m := $root.Values.webhook.managedJobsNamespaceSelector | default dict -}}
{{- $exprs = concat $exprs ($m.matchExpressions | default list) -}}
{{- $labels = merge (deepCopy ($m.matchLabels | default dict)) $labels -}}
{{- end -}}
{{- if $exprs }}
matchExpressions:
{{- toYaml $exprs | nindent 0 }}
{{- end }}
{{- if $labels }}
matchLabels:
{{- toYaml $labels | nindent 2 }}
{{- end }}
{{- end -}}

{{/* "true" when label selector (index . 0, a dict) matches labels (index . 1):
     matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist) as
     the apiserver evaluates them. */}}
{{- define "mkueue.selectorMatches" -}}
{{- $sel := index . 0 -}}
{{- $labels := index . 1 -}}
{{- $ok := true -}}
{{- range $k, $v := ($sel.matchLabels | default dict) }}
{{- if or (not (hasKey $labels $k)) (ne (toString (index $labels $k)) (toString $v)) }}{{ $ok = false }}{{ end }}
{{- end }}
{{- range ($sel.matchExpressions | default list) }}
{{- $has := hasKey $labels .key -}}
{{- $vals := list -}}
{{- range (.values | default list) }}{{ $vals = append $vals (toString .) }}{{ end -}}
{{- $in := and $has (has (toString (index $labels .key)) $vals) -}}
{{- if and (eq .operator "In") (not $in) }}{{ $ok = false }}{{ end }}
{{- if and (eq .operator "NotIn") $in }}{{ $ok = false }}{{ end }}
{{- if and (eq .operator "Exists") (not $has) }}{{ $ok = false }}{{ end }}
{{- if and (eq .operator "DoesNotExist") $has }}{{ $ok = false }}{{ end }}
{{- end }}
{{- if $ok }}true{{ end -}}
{{- end -}}

{{/* The release namespace's labels: read from the cluster when it can be
     (helm install/upgrade), else webhook.namespaceSelector.releaseNamespaceLabels,
     else the kubernetes.io/metadata.name label Kubernetes sets. */}}
{{- define "mkueue.releaseNamespaceLabels" -}}
{{- $ns := lookup "v1" "Namespace" "" .Release.Namespace -}}
{{- if $ns -}}
{{- toYaml (($ns.metadata).labels | default dict) -}}
{{- else if .Values.webhook.namespaceSelector.releaseNamespaceLabels -}}
{{- toYaml .Values.webhook.namespaceSelector.releaseNamespaceLabels -}}
{{- else -}}
{{- toYaml (dict "kubernetes.io/metadata.name" .Release.Namespace) -}}
{{- end -}}
{{- end -}}

{{/* Fails when an enabled kind's webhooks would select the release
     namespace: with failurePolicy Fail, the webhook's own pods could then
     not be created while it is down. */}}
{{- define "mkueue.checkOwnNamespace" -}}
{{- $labels := include "mkueue.releaseNamespaceLabels" . | fromYaml | default dict -}}
{{- $kinds := (include "mkueue.enabledKinds" . | fromYaml).kinds | default list -}}
{{- range $kinds }}
{{- $sel := include "mkueue.namespaceSelectorFor" (list $ .) | fromYaml | default dict -}}
{{- if include "mkueue.selectorMatches" (list $sel $labels) }}
{{- fail (printf "webhook.namespaceSelector: the %s webhooks would select the release namespace %s (labels %s), so the webhook could block its own restart; keep matchByName on (the namespace needs the kubernetes.io/metadata.name label) or label the namespace %s=true" .kind $.Release.Namespace (toJson $labels) ($.Values.webhook.namespaceSelector.optOutLabel | default "<webhook.namespaceSelector.optOutLabel>")) }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "mkueue.certManagerAnnotation" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "mkueue.webhookName" .) }}
{{- end }}
{{- end -}}

{{- define "mkueue.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
fsGroup: {{ .Values.securityContext.runAsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "mkueue.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Checks of values that would otherwise render something broken. */}}
{{- define "mkueue.validate" -}}
{{- $modes := list "self-managed" "cert-manager" "secret" -}}
{{- if not (has .Values.certificates.mode $modes) -}}
{{- fail (printf "certificates.mode must be one of %s, not %q" (join ", " $modes) .Values.certificates.mode) -}}
{{- end -}}
{{- if not (has .Values.webhook.failurePolicy (list "Fail" "Ignore")) -}}
{{- fail "webhook.failurePolicy must be Fail or Ignore" -}}
{{- end -}}
{{- $t := int .Values.webhook.timeoutSeconds -}}
{{- if or (lt $t 1) (gt $t 30) -}}
{{- fail "webhook.timeoutSeconds must be 1 to 30" -}}
{{- end -}}
{{- if not (has .Values.reconciler.mode (list "standalone" "with-kueue")) -}}
{{- fail "reconciler.mode must be standalone or with-kueue" -}}
{{- end -}}
{{- if not .Values.reconciler.dispatcher -}}
{{- fail "reconciler.dispatcher must be AllAtOnce, Incremental, or an external dispatcher's name" -}}
{{- end -}}
{{- if and .Values.webhook.url (not (hasPrefix "https://" .Values.webhook.url)) -}}
{{- fail "webhook.url must start with https://" -}}
{{- end -}}
{{- if and (not .Values.webhook.namespaceSelector.matchByName) (not .Values.webhook.namespaceSelector.optOutLabel) -}}
{{- fail "webhook.namespaceSelector: enable matchByName or set optOutLabel, or the webhooks would see kube-system and their own namespace" -}}
{{- end -}}
{{- include "mkueue.checkOwnNamespace" . -}}
{{- end -}}

{{/* include "mkueue.serviceAccountName" (list . "webhook") */}}
{{- define "mkueue.serviceAccountName" -}}
{{- $root := index . 0 -}}
{{- $c := index . 1 -}}
{{- $sa := (index $root.Values $c).serviceAccount -}}
{{- if $sa.create -}}
{{- default (include (printf "mkueue.%sName" $c) $root) $sa.name -}}
{{- else -}}
{{- default "default" $sa.name -}}
{{- end -}}
{{- end -}}

{{/* policy/v1 since Kubernetes 1.21; the chart needs 1.32 (Chart.yaml) */}}
{{- define "mkueue.pdbApiVersion" -}}
policy/v1
{{- end -}}

{{/* Extra SANs of the self-managed certificate: the values' list and the
     host of webhook.url, comma-separated. */}}
{{- define "mkueue.certSANs" -}}
{{- $sans := .Values.certificates.selfManaged.extraSANs | default list -}}
{{- if .Values.webhook.url -}}
{{- $host := (urlParse .Values.webhook.url).host | trimPrefix "[" -}}
{{- $host = regexReplaceAll "\\]?(:[0-9]+)?$" $host "" -}}
{{- $sans = append $sans $host -}}
{{- end -}}
{{- $sans | uniq | join "," -}}
{{- end -}}
