"""The DRA kubelet plugin half of the node agent (docs/design.md D10): it serves the claims that
land on the node and never imports the hand-over half (``agent``, ``interlocks``, ``publisher``);
the two see each other only through the protocols of :mod:`bridge.ports` (``.importlinter``).

Modules, one concern each: ``node_plugin`` (starting and stopping the plugin: the DRA service,
then registration), ``registration`` (the plugin-watcher server), ``plugin`` (NodePrepare /
NodeUnprepare), ``claims`` (preparing and unpreparing claims, with the last-line check),
``cdi_specs`` (the node's CDI spec directories and our own specs), ``checkpoint`` (the
prepared claims: v1 of any minor, unknown fields kept, docs/design.md D29), ``checkpoint_gc``
(which entries whose claim is gone to collect, pure, docs/design.md D30) and ``claim_collector``
(its reads and the unprepare, each tick), ``health_stream`` and ``device_health`` (device health
for the kubelet).
"""

from __future__ import annotations

__all__: list[str] = []
