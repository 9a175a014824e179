{{/* The chart's name, at most 63 characters. */}}
{{- define "preflight.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the prefix of every object's name. */}}
{{- define "preflight.fullname" -}}
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

{{- define "preflight.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The config of a release that names no servers: one placeholder, so that it installs. */}}
{{- define "preflight.placeholderConfig" -}}
servers:
  example:
    url: http://example-mcp:8080/mcp
    connect: lazy
{{- end }}

{{/* Labels every object carries. */}}
{{- define "preflight.labels" -}}
helm.sh/chart: {{ include "preflight.chart" . }}
{{ include "preflight.selectorLabels" . }}
app.kubernetes.io/version: {{ include "preflight.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the gateway's pods (Deployment, Service, PodDisruptionBudget). */}}
{{- define "preflight.selectorLabels" -}}
app.kubernetes.io/name: {{ include "preflight.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "preflight.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "preflight.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "preflight.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/* The image the pods run: pinned by digest when one is given, else by tag. */}}
{{- define "preflight.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "preflight.tag" .) }}
{{- end }}
{{- end }}

{{/* The Secret the pods read: the user's, or the chart's. */}}
{{- define "preflight.secretName" -}}
{{- default (include "preflight.fullname" .) .Values.existingSecret }}
{{- end }}

{{/* Whether the pods read a Secret at all. */}}
{{- define "preflight.usesSecret" -}}
{{- if or .Values.redis.enabled .Values.postgres.enabled .Values.requestState.enabled .Values.secretEnv }}true{{ end }}
{{- end }}

{{/* Whether more than one pod may run: then state must be shared. */}}
{{- define "preflight.replicated" -}}
{{- if .Values.autoscaling.enabled }}
{{- if gt (int .Values.autoscaling.maxReplicas) 1 }}true{{ end }}
{{- else if gt (int .Values.replicaCount) 1 }}true{{ end }}
{{- end }}

{{/* The fewest pods that run (a disruption budget with one pod would block node drains). */}}
{{- define "preflight.minReplicas" -}}
{{- if .Values.autoscaling.enabled }}{{ .Values.autoscaling.minReplicas }}{{ else }}{{ .Values.replicaCount }}{{ end }}
{{- end }}

{{/*
The gateway's config as written to the ConfigMap: .Values.config, or the placeholder. It
also refuses, with a message that says what to change, values that
would render objects the gateway cannot start with.
*/}}
{{- define "preflight.config" -}}
{{- $config := deepCopy (default dict .Values.config) }}
{{- if not $config }}
{{- $config = include "preflight.placeholderConfig" . | fromYaml }}
{{- end }}
{{- if hasKey $config "listen" }}
{{- fail "config.listen: the chart sets where the gateway listens (containerPort); remove listen from config" }}
{{- end }}
{{- if .Values.redis.enabled }}
{{- if and (not .Values.redis.url) (not .Values.existingSecret) }}
{{- fail "redis.enabled: set redis.url, or existingSecret naming a Secret with the key redis-url" }}
{{- end }}
{{- if not (hasKey $config "redis") }}
{{- fail "redis.enabled: the config must name the store: add redis: {url: \"${PREFLIGHT_REDIS_URL}\"} to config" }}
{{- end }}
{{- end }}
{{- if and .Values.postgres.enabled (not .Values.postgres.url) (not .Values.existingSecret) }}
{{- fail "postgres.enabled: set postgres.url, or existingSecret naming a Secret with the key postgres-url" }}
{{- end }}
{{- if .Values.requestState.enabled }}
{{- if and (not .Values.requestState.keys) (not .Values.existingSecret) }}
{{- fail "requestState.enabled: set requestState.keys (k1:$(openssl rand -base64 32)), or existingSecret naming a Secret with the key request-state-keys" }}
{{- end }}
{{- if ne (toString (default dict $config.requestState).keysEnv) "PREFLIGHT_REQUEST_STATE_KEYS" }}
{{- fail "requestState.enabled: the config must name the keys: add requestState: {keysEnv: PREFLIGHT_REQUEST_STATE_KEYS} to config" }}
{{- end }}
{{- end }}
{{- if and .Values.data.existingClaim (include "preflight.replicated" .) }}
{{- fail "data.existingClaim: with more than one replica (or autoscaling) every pod would mount the one claim: keep state in PostgreSQL and Redis and leave data.existingClaim out, or run one replica" }}
{{- end }}
{{- if include "preflight.replicated" . }}
{{- $disclosure := default dict $config.disclosure }}
{{- $disclosed := $disclosure.enabled }}
{{- range $name, $server := $config.servers }}
{{- if and (kindIs "map" $server) $server.disclose }}{{ $disclosed = true }}{{ end }}
{{- end }}
{{- if and $disclosed (ne (toString $disclosure.store) "redis") }}
{{- fail "config.disclosure.store: with more than one replica, disclosure grants must be shared: set config.disclosure.store to redis and enable redis" }}
{{- end }}
{{- end }}
{{- include "preflight.checkEnv" (dict "root" . "config" $config) }}
{{- toYaml $config }}
{{- end }}

{{/*
Fails when the config reads an environment variable (bearerTokenEnv, or ${NAME} without a
default) that neither secretEnv, env nor the chart sets: the gateway would refuse the file.
*/}}
{{- define "preflight.checkEnv" -}}
{{- $root := .root }}
{{- $known := dict "PREFLIGHT_REDIS_URL" $root.Values.redis.enabled "PREFLIGHT_POSTGRES_URL" $root.Values.postgres.enabled "HOME" true }}
{{- range $name, $_ := $root.Values.secretEnv }}{{ $_ := set $known $name true }}{{ end }}
{{- range $root.Values.env }}{{ $_ := set $known .name true }}{{ end }}
{{- $wanted := list }}
{{- range $name, $server := .config.servers }}
{{- if and (kindIs "map" $server) $server.bearerTokenEnv }}
{{- $wanted = append $wanted (printf "%s (servers.%s.bearerTokenEnv)" $server.bearerTokenEnv $name) }}
{{- end }}
{{- end }}
{{- /* ${NAME} and ${env:NAME} without a default; $${ is a literal ${. */}}
{{- $text := regexReplaceAll "\\$\\$\\{" (toYaml .config) "" }}
{{- range regexFindAll "\\$\\{(env:)?[A-Za-z_][A-Za-z0-9_]*\\}" $text -1 }}
{{- $wanted = append $wanted (printf "%s (${...} in config)" (trimSuffix "}" (trimPrefix "env:" (trimPrefix "${" .)))) }}
{{- end }}
{{- range $wanted }}
{{- $name := first (splitList " " .) }}
{{- if not (get $known $name) }}
{{- if hasPrefix "PREFLIGHT_REDIS_URL " . }}
{{- fail "config reads PREFLIGHT_REDIS_URL, which the pods have only with redis.enabled: enable it and set redis.url (or existingSecret)" }}
{{- else if hasPrefix "PREFLIGHT_POSTGRES_URL " . }}
{{- fail "config reads PREFLIGHT_POSTGRES_URL, which the pods have only with postgres.enabled: enable it and set postgres.url (or existingSecret)" }}
{{- end }}
{{- fail (printf "config reads the environment variable %s, which the pods do not have: add it to secretEnv (or env)" .) }}
{{- end }}
{{- end }}
{{- end }}
