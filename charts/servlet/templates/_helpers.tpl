{{/*
Names, labels and the small computations every template shares. Kept here so the selector
labels of the Deployment, Service, ServiceMonitor and PodDisruptionBudget can never drift apart.
*/}}

{{- define "servlet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-servlet, or the release name alone when it already says "servlet". */}}
{{- define "servlet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "servlet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "servlet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "servlet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "servlet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kdp
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
One probe of the servlet container: its fixed endpoint on the health port and the timings of
`probes.<name>`; nothing when `enabled` is false. Takes (dict "kind" "path" "timings").
*/}}
{{- define "servlet.probe" -}}
{{- if ne .timings.enabled false }}
{{ .kind }}:
  httpGet:
    path: {{ .path }}
    port: health
  {{- range $field, $value := omit .timings "enabled" }}
  {{ $field }}: {{ int $value }}
  {{- end }}
{{- end }}
{{- end }}

{{- define "servlet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "servlet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: the name of an existing ServiceAccount is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "servlet.image" -}}
{{- $image := .Values.image }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) }}
{{- end }}
{{- end }}

{{/* Where the kcp kubeconfig Secret is mounted, and the file --kcp-kubeconfig points at. */}}
{{- define "servlet.kcpKubeconfigDir" -}}
/etc/servlet/kcp
{{- end }}

{{- define "servlet.kcpKubeconfigPath" -}}
{{ include "servlet.kcpKubeconfigDir" . }}/kubeconfig
{{- end }}

{{/*
The related kinds named by any entry of publishedResources, as RBAC resource names
(secrets, configmaps), sorted and without repeats; one per line.
*/}}
{{- define "servlet.relatedResources" -}}
{{- $plurals := list }}
{{- range .Values.publishedResources }}
{{- range (.relatedKinds | default list) }}
{{- $plurals = append $plurals (printf "%ss" (lower .)) }}
{{- end }}
{{- end }}
{{- range ($plurals | uniq | sortAlpha) }}
{{ . }}
{{- end }}
{{- end }}

{{/* The --buckets the replicas run with: the value when several replicas elect a leader, else 0. */}}
{{- define "servlet.buckets" -}}
{{- if and (gt (int .Values.replicaCount) 1) .Values.leaderElection.enabled }}
{{- int .Values.buckets }}
{{- else }}
{{- 0 }}
{{- end }}
{{- end }}

{{/* Fail early on combinations the schema cannot express. */}}
{{- define "servlet.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail (printf "leaderElection.enabled: must be true when replicaCount is %d; without leader election every replica would write" (int .Values.replicaCount)) }}
{{- end }}
{{- $pdb := .Values.podDisruptionBudget }}
{{- if and $pdb.enabled (hasKey $pdb "minAvailable") (hasKey $pdb "maxUnavailable") }}
{{- fail "podDisruptionBudget: set either minAvailable or maxUnavailable, not both" }}
{{- end }}
{{- range $key, $_ := .Values.commonLabels }}
{{- if or (hasPrefix "app.kubernetes.io/" $key) (eq $key "helm.sh/chart") }}
{{- fail (printf "commonLabels.%s: the chart sets this label itself; choose another key" $key) }}
{{- end }}
{{- end }}
{{- if eq (int .Values.metrics.port) (int .Values.health.port) }}
{{- fail (printf "metrics.port and health.port: both are %d; they must differ" (int .Values.metrics.port)) }}
{{- end }}
{{- end }}

{{/* A number as an integer, a percentage as a quoted string (PodDisruptionBudget fields). */}}
{{- define "servlet.intOrPercent" -}}
{{- if kindIs "string" . }}{{ . | quote }}{{ else }}{{ int . }}{{ end }}
{{- end }}
