{{/*
The agent's DaemonSet: (dict "root" . "nvml" false) the default one, (dict "root" . "nvml" true)
the NVIDIA-only one of agent.nvml (privileged, the driver root mounted, NVML loaded from it).
*/}}
{{- define "dra-bridge.agentDaemonSet" -}}
{{- $root := .root }}
{{- $nvml := .nvml }}
{{- $agent := $root.Values.agent }}
{{- $kubelet := trimSuffix "/" $agent.kubeletDir }}
{{- $cdi := $agent.cdiDirs }}
{{- $component := ternary "agent-nvml" "agent" $nvml }}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ include "dra-bridge.agentName" $root }}-agent{{ if $nvml }}-nvml{{ end }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "dra-bridge.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $component }}
spec:
  selector:
    matchLabels:
      {{- include "dra-bridge.selectorLabels" (dict "root" $root "component" $component) | nindent 6 }}
  updateStrategy:
    {{- with $agent.updateStrategy }}
    {{- toYaml . | nindent 4 }}
    {{- else }}
    type: RollingUpdate
    rollingUpdate:
      {{- if $agent.surgeRollout }}
      # The new agent registers beside the old one (per-pod socket names), then the old goes.
      maxSurge: 1
      maxUnavailable: 0
      {{- else }}
      # Fixed socket names: the old agent must be gone before the new one registers.
      maxSurge: 0
      maxUnavailable: 1
      {{- end }}
    {{- end }}
  template:
    metadata:
      {{- $labels := printf "%s\napp.kubernetes.io/component: %s" (include "dra-bridge.labels" $root) $component }}
      labels:
        {{- include "dra-bridge.podMap" (dict "own" $labels "user" $agent.podLabels) | nindent 8 }}
      annotations:
        {{- $checksums := dict "checksum/catalog" (include "dra-bridge.catalog" $root | sha256sum) | toYaml }}
        {{- include "dra-bridge.podMap" (dict "own" $checksums "user" $agent.podAnnotations) | nindent 8 }}
    spec:
      serviceAccountName: {{ include "dra-bridge.agentName" $root }}
      # No <SERVICE>_PORT variables: a Service named <x>-webhook would inject
      # <X>_WEBHOOK_PORT, which is dra-webhook's own --port twin when x is dra.
      enableServiceLinks: false
      priorityClassName: {{ $agent.priorityClassName | quote }}
      {{- with include "dra-bridge.imagePullSecrets" $root }}{{ . | nindent 6 }}{{ end }}
      {{- if not (kindIs "invalid" $agent.terminationGracePeriodSeconds) }}
      terminationGracePeriodSeconds: {{ $agent.terminationGracePeriodSeconds }}
      {{- end }}
      # Root without capabilities: the kubelet's sockets and directories are root's; nothing
      # here needs a capability, a device or the host's namespaces.
      securityContext:
        {{- $podSecurity := dict "runAsUser" 0 "seccompProfile" (dict "type" "RuntimeDefault") | toYaml }}
        {{- include "dra-bridge.securityContext" (dict "own" $podSecurity "user" $agent.podSecurityContext) | nindent 8 }}
      # GPU nodes (values: agent.nodeAffinity), with agent.affinity's other rules beside it; with
      # agent.nvml on, split by agent.nvml.nodeLabels: NVIDIA nodes get the NVML agent, the others
      # this one, never both.
      affinity:
        {{- include "dra-bridge.agentAffinity" (dict "root" $root "nvml" $nvml) | nindent 8 }}
      {{- with $agent.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $agent.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: agent
          image: {{ include "dra-bridge.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: [dra-bridge, run]
          {{- with $agent.extraArgs }}
          args:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          env:
            - name: DRA_BRIDGE_NODE_NAME
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
            {{- if $agent.surgeRollout }}
            - name: DRA_BRIDGE_POD_UID
              valueFrom: {fieldRef: {fieldPath: metadata.uid}}
            {{- end }}
            - {name: DRA_BRIDGE_KUBELET_DIR, value: {{ $kubelet | quote }}}
            - {name: DRA_BRIDGE_STATE_DIR, value: {{ $agent.stateDir | quote }}}
            - {name: DRA_BRIDGE_CDI_DIR, value: {{ join "," $cdi | quote }}}
            - {name: DRA_BRIDGE_CATALOG, value: /etc/dra-bridge/catalog.yaml}
            - {name: DRA_BRIDGE_SETTLE_PERIOD, value: {{ $agent.settlePeriod | quote }}}
            - {name: DRA_BRIDGE_POLL_INTERVAL, value: {{ $agent.pollInterval | quote }}}
            - {name: DRA_BRIDGE_HEALTH_PORT, value: {{ $agent.healthPort | quote }}}
            - {name: DRA_BRIDGE_LOG_LEVEL, value: {{ $agent.logLevel | quote }}}
            {{- if $nvml }}
            # NVML from the host's driver (mounted below); the toolkit adds no GPU of its own.
            - {name: DRA_BRIDGE_NVML_DRIVER_ROOT, value: /driver-root}
            - {name: NVIDIA_VISIBLE_DEVICES, value: void}
            {{- end }}
            {{- with $agent.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            # /healthz, /readyz and /metrics: named metrics for the PodMonitor (values: monitoring).
            - {name: metrics, containerPort: {{ $agent.healthPort }}, protocol: TCP}
          # /healthz: the loop ticks and the plugin's sockets answer; /readyz: the kubelet and
          # the API server answer (an outside failure never restarts the agent).
          livenessProbe:
            httpGet: {path: /healthz, port: metrics}
            periodSeconds: 10
            failureThreshold: 6
          readinessProbe:
            httpGet: {path: /readyz, port: metrics}
            periodSeconds: 10
          resources:
            {{- toYaml $agent.resources | nindent 12 }}
          securityContext:
            {{- if $nvml }}
            # NVML opens the GPUs' device nodes (/dev/nvidiactl, /dev/nvidia<N>) of every GPU on the
            # node, as the NVIDIA DRA driver's kubelet plugin does: privileged, in this DaemonSet only.
            {{- $security := dict "privileged" true "readOnlyRootFilesystem" true | toYaml }}
            {{- include "dra-bridge.securityContext" (dict "own" $security "user" $agent.securityContext) | nindent 12 }}
            {{- else }}
            {{- $security := dict "allowPrivilegeEscalation" false "readOnlyRootFilesystem" true "capabilities" (dict "drop" (list "ALL")) | toYaml }}
            {{- include "dra-bridge.securityContext" (dict "own" $security "user" $agent.securityContext) | nindent 12 }}
            {{- end }}
          volumeMounts:
            # Host paths at the same paths: the registration names sockets as the kubelet sees them.
            - {name: plugins-registry, mountPath: {{ printf "%s/plugins_registry" $kubelet | quote }}}
            - {name: plugin, mountPath: {{ printf "%s/plugins/dra-bridge.io" $kubelet | quote }}}
            - {name: pod-resources, mountPath: {{ printf "%s/pod-resources" $kubelet | quote }}, readOnly: true}
            - {name: device-plugins, mountPath: {{ printf "%s/device-plugins" $kubelet | quote }}, readOnly: true}
            - {name: state, mountPath: {{ $agent.stateDir | quote }}}
            {{- range $i, $dir := $cdi }}
            - {name: cdi-{{ $i }}, mountPath: {{ $dir | quote }}{{ if lt $i (sub (len $cdi) 1) }}, readOnly: true{{ end }}}
            {{- end }}
            - {name: catalog, mountPath: /etc/dra-bridge/catalog.yaml, subPath: catalog.yaml, readOnly: true}
            - {name: tmp, mountPath: /tmp}
            {{- if $nvml }}
            # The driver's files as the host sees them, also when a driver container mounts them later.
            - {name: driver-root, mountPath: /driver-root, readOnly: true, mountPropagation: HostToContainer}
            {{- end }}
            {{- with $agent.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: plugins-registry
          hostPath: {path: {{ printf "%s/plugins_registry" $kubelet | quote }}, type: Directory}
        - name: plugin
          hostPath: {path: {{ printf "%s/plugins/dra-bridge.io" $kubelet | quote }}, type: DirectoryOrCreate}
        # Directories, not socket files: the kubelet re-creates the sockets when it restarts.
        - name: pod-resources
          hostPath: {path: {{ printf "%s/pod-resources" $kubelet | quote }}, type: Directory}
        - name: device-plugins
          hostPath: {path: {{ printf "%s/device-plugins" $kubelet | quote }}, type: DirectoryOrCreate}
        - name: state
          hostPath: {path: {{ $agent.stateDir | quote }}, type: DirectoryOrCreate}
        {{- range $i, $dir := $cdi }}
        # The toolkit's spec may live in any CDI directory; ours go to the last.
        - name: cdi-{{ $i }}
          hostPath: {path: {{ $dir | quote }}, type: DirectoryOrCreate}
        {{- end }}
        - name: catalog
          configMap:
            name: {{ include "dra-bridge.fullname" $root }}-catalog
        - name: tmp
          emptyDir: {sizeLimit: 16Mi}
        {{- if $nvml }}
        - name: driver-root
          hostPath: {path: {{ $agent.nvml.driverRoot | quote }}, type: DirectoryOrCreate}
        {{- end }}
        {{- with $agent.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end }}

{{/*
The agent's affinity: agent.affinity, its nodeAffinity merged over agent.nodeAffinity.
With agent.nvml.enabled its required node terms are split by agent.nvml.nodeLabels (N, any of
them): the NVML DaemonSet gets each term ANDed with each label (a term that already holds one
stays as it is), the default one each term ANDed with the negation of all (In -> NotIn, Exists ->
DoesNotExist; a term that holds one is dropped), so the two never select the same node and
together select what the terms select.
*/}}
{{- define "dra-bridge.agentAffinity" -}}
{{- $agent := .root.Values.agent }}
{{- $affinity := merge (deepCopy ($agent.affinity | default dict)) (dict "nodeAffinity" (deepCopy ($agent.nodeAffinity | default dict))) }}
{{- $nodeAffinity := $affinity.nodeAffinity }}
{{- if $agent.nvml.enabled }}
{{- $labels := $agent.nvml.nodeLabels }}
{{- $shown := list }}
{{- range $labels }}{{ $shown = append $shown (toYaml .) }}{{ end }}
{{- $required := $nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution | default dict }}
{{- $terms := list }}
{{- range $term := ($required.nodeSelectorTerms | default (list dict)) }}
{{- $expressions := $term.matchExpressions | default list }}
{{- $nvidia := false }}
{{- range $expressions }}{{ if has (toYaml .) $shown }}{{ $nvidia = true }}{{ end }}{{ end }}
{{- if $.nvml }}
{{- if $nvidia }}
{{- $terms = append $terms $term }}
{{- else }}
{{- range $labels }}
{{- $terms = append $terms (merge (dict "matchExpressions" (append $expressions .)) (omit $term "matchExpressions")) }}
{{- end }}
{{- end }}
{{- else if not $nvidia }}
{{- $not := list }}
{{- range $labels }}
{{- if eq .operator "Exists" }}
{{- $not = append $not (dict "key" .key "operator" "DoesNotExist") }}
{{- else }}
{{- $not = append $not (dict "key" .key "operator" "NotIn" "values" .values) }}
{{- end }}
{{- end }}
{{- $terms = append $terms (merge (dict "matchExpressions" (concat $expressions $not)) (omit $term "matchExpressions")) }}
{{- end }}
{{- end }}
{{- $_ := set $required "nodeSelectorTerms" $terms }}
{{- $_ := set $nodeAffinity "requiredDuringSchedulingIgnoredDuringExecution" $required }}
{{- end }}
{{- $_ := set $affinity "nodeAffinity" $nodeAffinity }}
{{- toYaml $affinity }}
{{- end }}
