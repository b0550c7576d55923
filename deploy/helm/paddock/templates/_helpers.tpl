{{- define "paddock.labels" -}}
app.kubernetes.io/name: paddock
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "paddock.selector" -}}
app.kubernetes.io/name: paddock
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: daemon
{{- end -}}

{{- define "paddock.fullname" -}}
{{- printf "%s-paddock" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
