{{/*
Labels Helm's tooling expects on every object the chart installs. Objects Landlord itself
manages (its admission policies, labeled app.kubernetes.io/managed-by: landlord so that the
operator's cache sees them) take landlord.chartLabels, which leaves managed-by alone.
*/}}
{{- define "landlord.chartLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "landlord.version" . | quote }}
{{- end }}

{{- define "landlord.labels" -}}
{{ include "landlord.chartLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The operator pod's labels, as config/manager selects it (the metrics Service too). */}}
{{- define "landlord.selectorLabels" -}}
app.kubernetes.io/name: landlord
app.kubernetes.io/component: controller-manager
{{- end }}

{{- define "landlord.version" -}}
{{ .Values.image.tag | default (printf "v%s" .Chart.AppVersion) }}
{{- end }}

{{/* The store backend the operator's configuration names: file (the default), gcs or url. */}}
{{- define "landlord.storeBackend" -}}
{{ ((.Values.config.secrets).store).backend | default "file" }}
{{- end }}

{{/*
Landlord's admission policies name the operator by its ServiceAccount in landlord-system
(policies.yaml is generated for it), and config/ installs it there: the chart does too.
*/}}
{{- define "landlord.checkNamespace" -}}
{{- if ne .Release.Namespace "landlord-system" }}
{{- fail (printf "install Landlord into the namespace landlord-system (helm install -n landlord-system), not %q: its admission policies name the operator's ServiceAccount there" .Release.Namespace) }}
{{- end }}
{{- end }}
