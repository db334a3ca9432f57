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

{{/* The operator's image: by tag, and by digest too when image.digest is set. */}}
{{- define "landlord.image" -}}
{{ .Values.image.repository }}:{{ include "landlord.version" . }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}

{{/*
The operator's configuration file. config/ installs Landlord in landlord-system, and its
configuration names the operator's identity and the credentials namespace there: in another
namespace the two follow the release's, unless they were set to something else.
*/}}
{{- define "landlord.config" -}}
{{- $config := deepCopy .Values.config }}
{{- if ne .Release.Namespace "landlord-system" }}
{{- $controller := $config.controller | default dict }}
{{- if eq ($controller.identity | default "system:serviceaccount:landlord-system:landlord-controller-manager") "system:serviceaccount:landlord-system:landlord-controller-manager" }}
{{- $_ := set $controller "identity" (printf "system:serviceaccount:%s:landlord-controller-manager" .Release.Namespace) }}
{{- $_ := set $config "controller" $controller }}
{{- end }}
{{- $databases := $config.databases | default dict }}
{{- if eq ($databases.credentialsNamespace | default "landlord-system") "landlord-system" }}
{{- $_ := set $databases "credentialsNamespace" .Release.Namespace }}
{{- $_ := set $config "databases" $databases }}
{{- end }}
{{- end }}
{{- toYaml $config }}
{{- end }}
