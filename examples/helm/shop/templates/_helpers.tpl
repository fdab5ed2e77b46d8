{{/* The name every object of the release starts with. */}}
{{- define "shop.fullname" -}}
{{ .Release.Name }}-shop
{{- end -}}

{{/* Labels on every object: the release's and the user's. */}}
{{- define "shop.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{ toYaml .Values.labels }}
{{- end -}}
