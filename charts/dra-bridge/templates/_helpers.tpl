{{/* Names: <release>-<chart> unless the release name already holds the chart name. */}}
{{- define "dra-bridge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dra-bridge.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "dra-bridge.webhookName" -}}{{ include "dra-bridge.fullname" . }}-webhook{{- end }}
{{/* The agent's ServiceAccount: the ValidatingAdmissionPolicies match its user name. */}}
{{- define "dra-bridge.agentName" -}}{{ include "dra-bridge.fullname" . }}{{- end }}

{{- define "dra-bridge.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "dra-bridge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "dra-bridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dra-bridge.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
The image: global.imageRegistry, else imageRegistry, prepended to the repository (required:
nothing is published), then @digest when image.digest is set (the tag ignored, as
cert-manager's chart does), else :tag (default the appVersion).
*/}}
{{- define "dra-bridge.image" -}}
{{- $repository := required (printf "image.repository is required: no dra-bridge image is published. Build it from the repository's Dockerfile (docker build --build-arg BASE_IMAGE=python:3.11-slim-bookworm@sha256:<digest> -t REGISTRY/dra-bridge:%s .) or as an OCI archive (hack/image.sh archive dra-bridge.tar, then skopeo copy oci-archive:dra-bridge.tar docker://REGISTRY/dra-bridge:%s), push it, and set image.repository=REGISTRY/dra-bridge; see the chart README, \"The image\"" .Chart.AppVersion .Chart.AppVersion) .Values.image.repository }}
{{- $registry := default .Values.imageRegistry ((.Values.global | default dict).imageRegistry) }}
{{- if $registry }}{{ trimSuffix "/" $registry }}/{{ end }}{{ $repository }}
{{- with .Values.image.digest }}@{{ . }}{{ else }}:{{ default $.Chart.AppVersion $.Values.image.tag }}{{ end }}
{{- end }}

{{/* imagePullSecrets and global.imagePullSecrets (names or {name}), as a pod's list; empty: nothing. */}}
{{- define "dra-bridge.imagePullSecrets" -}}
{{- $secrets := list }}
{{- range .Values.imagePullSecrets }}{{ $secrets = append $secrets (dict "name" .name) }}{{ end }}
{{- range ((.Values.global | default dict).imagePullSecrets | default list) }}
{{- if kindIs "string" . }}{{ $secrets = append $secrets (dict "name" .) }}{{ else }}{{ $secrets = append $secrets (dict "name" .name) }}{{ end }}
{{- end }}
{{- with $secrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
A pod's labels or annotations: the chart's own (a YAML map, which win) over the user's map.
Call with (dict "own" <yaml text> "user" <map>).
*/}}
{{- define "dra-bridge.podMap" -}}
{{- $own := .own | fromYaml | default dict }}
{{- toYaml (merge $own (deepCopy (.user | default dict))) }}
{{- end }}

{{/* A securityContext: the chart's (YAML text) with the user's map merged over it. */}}
{{- define "dra-bridge.securityContext" -}}
{{- toYaml (mergeOverwrite (.own | fromYaml) (deepCopy (.user | default dict))) }}
{{- end }}

{{/*
The resource.k8s.io version: the value, else from the cluster's version like the vendor
driver's chart (v1 is GA from 1.34; 1.33 serves v1beta2 when enabled, 1.32 v1beta1).
*/}}
{{- define "dra-bridge.resourceApiVersion" -}}
{{- if .Values.resourceApiVersion }}
{{- printf "resource.k8s.io/%s" (trimPrefix "resource.k8s.io/" .Values.resourceApiVersion) }}
{{- else if semverCompare ">=1.34.0-0" .Capabilities.KubeVersion.Version }}
{{- print "resource.k8s.io/v1" }}
{{- else if and (semverCompare ">=1.33.0-0" .Capabilities.KubeVersion.Version) (.Capabilities.APIVersions.Has "resource.k8s.io/v1beta2") }}
{{- print "resource.k8s.io/v1beta2" }}
{{- else }}
{{- print "resource.k8s.io/v1beta1" }}
{{- end }}
{{- end }}

{{/* The catalog extension's document (the ConfigMap's catalog.yaml). */}}
{{- define "dra-bridge.catalog" -}}
apiVersion: catalog.dra-bridge.io/v1
kind: Catalog
target: {{ .Values.catalog.target | quote }}
migProfiles: {{ .Values.catalog.migProfiles | toJson }}
migProfileAliases: {{ .Values.catalog.migProfileAliases | toJson }}
resources: {{ .Values.catalog.resources | toJson }}
{{- end }}

{{/* The webhook policy's document (the ConfigMap's policy.yaml). */}}
{{- define "dra-bridge.policy" -}}
apiVersion: policy.dra-bridge.io/v1
{{- with omit .Values.webhook.policy "apiVersion" }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The matchConditions' one expression: true when a container or init container names a
catalogued resource (shipped names and patterns, files/catalog-resources.yaml, plus the
values' catalog.resources) in its limits or requests. Conditions are ANDed, so the OR is one
expression; every optional field is guarded with has(): an evaluation error under
failurePolicy Fail would refuse the pod. Names and regexes are JSON strings, valid CEL strings.
*/}}
{{- define "dra-bridge.matchExpression" -}}
{{- $shipped := .Files.Get "files/catalog-resources.yaml" | fromYaml }}
{{- $names := list }}
{{- $patterns := list }}
{{- range $shipped.names }}{{ $names = append $names . }}{{ end }}
{{- range $shipped.patterns }}{{ $patterns = append $patterns . }}{{ end }}
{{- range .Values.catalog.resources }}
{{- if .name }}{{ $names = append $names .name }}{{ end }}
{{- if .pattern }}{{ $patterns = append $patterns .pattern }}{{ end }}
{{- end }}
{{- $tests := list (printf "k in %s" (toJson $names)) }}
{{- range $patterns }}
{{- $parts := splitList "{profile}" . }}
{{- /* a CEL double-quoted string: JSON's escapes (\\, \", \uXXXX) are CEL's too, so a quote or a backslash in a pattern stays in it */}}
{{- $regex := printf "^%s%s%s$" (regexQuoteMeta (index $parts 0)) $shipped.profileRegex (regexQuoteMeta (index $parts 1)) }}
{{- $tests = append $tests (printf "k.matches(%s)" (toJson $regex)) }}
{{- end }}
{{- $k := join " || " $tests }}
{{- $c := printf "has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(k, %s)) || (has(c.resources.requests) && c.resources.requests.exists(k, %s)))" $k $k }}
{{- printf "object.spec.containers.exists(c, %s) || (has(object.spec.initContainers) && object.spec.initContainers.exists(c, %s))" $c $c }}
{{- end }}

{{/* The namespaces a mode never reaches: kube-system, the release namespace, the opted out. */}}
{{- define "dra-bridge.excludedNamespaces" -}}
- key: kubernetes.io/metadata.name
  operator: NotIn
  values: [kube-system, {{ .Release.Namespace | quote }}]
- key: {{ .Values.webhook.optOutLabel | quote }}
  operator: DoesNotExist
{{- end }}

{{/* The Secret holding the webhook's serving pair (tls.crt, tls.key; ca.crt but in existing-secret mode). */}}
{{- define "dra-bridge.tlsSecretName" -}}
{{- if eq .Values.webhook.certificates.mode "existing-secret" }}
{{- required "webhook.certificates.existingSecret.name is required when webhook.certificates.mode is existing-secret" .Values.webhook.certificates.existingSecret.name }}
{{- else }}
{{- include "dra-bridge.webhookName" . }}-tls
{{- end }}
{{- end }}

{{/*
Seconds of a Go duration in h, m and s (the schema's form of the cert-manager durations, e.g.
2160h, 1h30m, 89m59.5s), printed as a float.
*/}}
{{- define "dra-bridge.durationSeconds" -}}
{{- $factors := dict "h" 3600.0 "m" 60.0 "s" 1.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?[hms]" . -1 }}
{{- $unit := regexFind "[hms]$" . }}
{{- $total = addf $total (mulf (trimSuffix $unit . | float64) (get $factors $unit)) }}
{{- end }}
{{- $total }}
{{- end }}
