{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "fleet-controller.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's resources: <release>-<chart>, or <release> when it already
contains the chart name. */}}
{{- define "fleet-controller.fullname" -}}
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

{{- define "fleet-controller.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "fleet-controller.labels" -}}
helm.sh/chart: {{ include "fleet-controller.chart" . }}
{{ include "fleet-controller.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: {{ .Values.mode }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the controller's pods. */}}
{{- define "fleet-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fleet-controller.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "fleet-controller.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fleet-controller.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The container image. */}}
{{- define "fleet-controller.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Fails unless mode is hub or agent. */}}
{{- define "fleet-controller.checkMode" -}}
{{- if not (has .Values.mode (list "hub" "agent")) }}
{{- fail (printf "mode: %q is neither hub nor agent" (toString .Values.mode)) }}
{{- end }}
{{- end }}

{{/* The objects of files/agent-role.yaml (controller-gen's agent roles: a ClusterRole and a Role
in fleet-system), as a YAML list. */}}
{{- define "fleet-controller.agentRoles" -}}
{{- $objs := list }}
{{- range regexSplit "(?m)^---[ \t]*$" (.Files.Get "files/agent-role.yaml") -1 }}
{{- $o := fromYaml . }}
{{- if $o.kind }}
{{- $objs = append $objs $o }}
{{- end }}
{{- end }}
{{- toYaml $objs }}
{{- end }}
