{{/* Names and labels. */}}
{{- define "fleetgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "fleetgate.fullname" -}}
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

{{- define "fleetgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "fleetgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: pass (list $ "controller"). */}}
{{- define "fleetgate.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "fleetgate.name" $ }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "fleetgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fleetgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "fleetgate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if eq $tag "latest" }}
{{- fail "image.tag: pin a version or set image.digest; \"latest\" is refused" }}
{{- end }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* NATS: the URL, the credentials Secret, and the bundled server's names. */}}
{{- define "fleetgate.natsFullname" -}}
{{- if .Values.nats.fullnameOverride }}
{{- .Values.nats.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default "nats" .Values.nats.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "fleetgate.natsSelectorLabels" -}}
app.kubernetes.io/name: {{ default "nats" .Values.nats.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: nats
{{- end }}

{{- define "fleetgate.natsURL" -}}
{{- if .Values.nats.enabled }}
{{- $scheme := ternary "tls" "nats" .Values.natsTLS.enabled }}
{{- printf "%s://%s.%s.svc:%v" $scheme (include "fleetgate.natsFullname" .) .Release.Namespace (int (dig "config" "nats" "port" 4222 .Values.nats)) }}
{{- else }}
{{- required "externalNats.url: set the URL of your NATS cluster, or nats.enabled=true for the bundled one" .Values.externalNats.url }}
{{- end }}
{{- end }}

{{- define "fleetgate.natsSecretName" -}}
{{- default (printf "%s-nats-credentials" (include "fleetgate.fullname" .)) .Values.natsAuth.existingSecret }}
{{- end }}

{{/* The key in the credentials Secret of one role: pass (list $ "controller"). */}}
{{- define "fleetgate.natsSecretKey" -}}
{{- $ := index . 0 -}}
{{- $role := index . 1 -}}
{{- printf "%s.%s" $role (ternary "creds" "seed" (eq $.Values.natsAuth.type "creds")) }}
{{- end }}

{{- define "fleetgate.natsAuthConfigMapName" -}}
{{- printf "%s-fleetgate-nats-auth" .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The controllers' admin token Secret. */}}
{{- define "fleetgate.adminSecretName" -}}
{{- default (printf "%s-admin-token" (include "fleetgate.fullname" .)) .Values.adminToken.existingSecret }}
{{- end }}

{{/* The edges' admin token Secret: their own, which a controller refuses. */}}
{{/* An edge key Secret: pass (list $ "input-state"), (list $ "session-owner") or (list $ "signin"). */}}
{{- define "fleetgate.edgeKeySecretName" -}}
{{- $ := index . 0 -}}
{{- $what := index . 1 -}}
{{- $k := get (dict "input-state" $.Values.edge.inputStateKey "session-owner" $.Values.edge.sessionOwnerKey "signin" $.Values.edge.signInKey) $what -}}
{{- default (printf "%s-edge-%s" (include "fleetgate.fullname" $) $what) $k.existingSecret }}
{{- end }}

{{- define "fleetgate.edgeAdminSecretName" -}}
{{- default (printf "%s-edge-admin-token" (include "fleetgate.fullname" .)) .Values.adminToken.edge.existingSecret }}
{{- end }}

{{/* The admin token Secret of one role: pass (list $ "controller") or (list $ "edge"). */}}
{{- define "fleetgate.roleAdminSecretName" -}}
{{- $ := index . 0 -}}
{{- if eq (index . 1) "edge" }}{{ include "fleetgate.edgeAdminSecretName" $ }}{{ else }}{{ include "fleetgate.adminSecretName" $ }}{{ end }}
{{- end }}

{{/*
The NATS client flags of one role, as env: pass (list $ "controller").
Files are mounted under /etc/fleetgate/nats (see fleetgate.natsVolumes).
*/}}
{{- define "fleetgate.natsEnv" -}}
{{- $ := index . 0 -}}
{{- $role := index . 1 -}}
- name: FLEETGATE_NATS_URL
  value: {{ include "fleetgate.natsURL" $ | quote }}
{{- if eq $.Values.natsAuth.type "creds" }}
- name: FLEETGATE_NATS_CREDS
  value: /etc/fleetgate/nats/{{ include "fleetgate.natsSecretKey" (list $ $role) }}
{{- else }}
- name: FLEETGATE_NATS_NKEY_SEED
  value: /etc/fleetgate/nats/{{ include "fleetgate.natsSecretKey" (list $ $role) }}
{{- end }}
{{- if eq $role "controller" }}
- name: {{ ternary "FLEETGATE_NATS_EDGES_CREDS" "FLEETGATE_NATS_EDGES_NKEY_SEED" (eq $.Values.natsAuth.type "creds") }}
  value: /etc/fleetgate/nats/{{ include "fleetgate.natsSecretKey" (list $ "controller-edges") }}
{{- end }}
{{- if $.Values.natsTLS.enabled }}
- name: FLEETGATE_NATS_TLS_CA
  value: /etc/fleetgate/nats-tls/{{ $.Values.natsTLS.caKey }}
{{- if $.Values.natsTLS.clientCert }}
- name: FLEETGATE_NATS_TLS_CERT
  value: /etc/fleetgate/nats-tls/{{ $.Values.natsTLS.certKey }}
- name: FLEETGATE_NATS_TLS_KEY
  value: /etc/fleetgate/nats-tls/{{ $.Values.natsTLS.keyKey }}
{{- end }}
{{- end }}
{{- end }}

{{- define "fleetgate.natsVolumes" -}}
{{- $ := index . 0 -}}
{{- $role := index . 1 -}}
- name: nats-credentials
  secret:
    secretName: {{ include "fleetgate.natsSecretName" $ }}
    defaultMode: 0400
    items:
      - key: {{ include "fleetgate.natsSecretKey" (list $ $role) }}
        path: {{ include "fleetgate.natsSecretKey" (list $ $role) }}
      {{- if eq $role "controller" }}
      - key: {{ include "fleetgate.natsSecretKey" (list $ "controller-edges") }}
        path: {{ include "fleetgate.natsSecretKey" (list $ "controller-edges") }}
      {{- end }}
{{- if $.Values.natsTLS.enabled }}
- name: nats-tls
  secret:
    secretName: {{ required "natsTLS.secretName: the Secret with the NATS CA (and client certificate)" $.Values.natsTLS.secretName }}
    defaultMode: 0400
{{- end }}
{{- end }}

{{- define "fleetgate.natsVolumeMounts" -}}
- name: nats-credentials
  mountPath: /etc/fleetgate/nats
  readOnly: true
{{- if .Values.natsTLS.enabled }}
- name: nats-tls
  mountPath: /etc/fleetgate/nats-tls
  readOnly: true
{{- end }}
{{- end }}

{{/*
The admin API flags: the token file and the Host values the API answers
besides loopback (the pod's IP for Prometheus, the Services' names).
Pass (list $ "controller" service-name).
*/}}
{{- define "fleetgate.adminEnv" -}}
{{- $ := index . 0 -}}
{{- $svc := index . 2 -}}
{{- $ns := $.Release.Namespace -}}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: FLEETGATE_ADMIN_TOKEN_FILE
  value: /etc/fleetgate/admin/{{ $.Values.adminToken.key }}
- name: FLEETGATE_ADMIN_ALLOWED_HOSTS
  value: {{ join "," (concat (list "$(POD_IP)" $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns $.Values.clusterDomain)) $.Values.adminToken.allowedHosts) | quote }}
{{- end }}

{{- define "fleetgate.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext }}
{{- end }}

{{- define "fleetgate.containerSecurityContext" -}}
{{- toYaml .Values.securityContext }}
{{- end }}

{{/* The fleet config as a dict (for the edge flags that mirror it). */}}
{{- define "fleetgate.separator" -}}
{{- $agg := default dict .Values.fleet.config.aggregation }}
{{- default "_" $agg.separator }}
{{- end }}

{{- define "fleetgate.pinnedTools" -}}
{{- $out := list }}
{{- range (default list .Values.fleet.config.groups) }}
{{- if eq .name $.Values.edge.group }}
{{- $out = default list .pinned_tools }}
{{- end }}
{{- end }}
{{- join "," $out }}
{{- end }}
