"""What the real-node tests read from pods: logs, the GPUs a container saw, and the clean-up.

A test container runs :data:`SHOW`, which prints the identity files the toolkit's (fake) CDI
edits mounted (one ``GPU-...``/``MIG-...`` UUID a line), the ``/dev/nvidia*`` nodes as
``dev:<name>`` lines and ``NVIDIA_VISIBLE_DEVICES`` as ``env:<value>`` (what an envvar-style
device plugin hands the runtime), then ``done``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.bridge_node import V1, our_slices, set_mode
from tests.e2e.kubeapi import KubeClient, api_path, wait_for
from tests.e2e.realnode import RealNode

SHOW = (
    "cat /run/fake-nvidia/* 2>/dev/null; ls /dev/ | grep nvidia | sed 's/^/dev:/'; "
    'echo "env:${NVIDIA_VISIBLE_DEVICES:-}"'
)


def shows(then: str = "exec sleep 3600") -> str:
    """The container script: :data:`SHOW`, ``done``, then ``then``."""
    return f"{SHOW}; echo done; {then}"


def log_of(kube: KubeClient, namespace: str, name: str, container: str | None = None) -> str:
    """A pod's (or one container's) log; empty while there is none."""
    query = f"?container={container}" if container else ""
    text: str | None = kube.request("GET", api_path("v1", "pods", namespace, name) + f"/log{query}")
    return text or ""  # an empty log decodes as None


def finished_log(kube: KubeClient, namespace: str, name: str) -> str | None:
    """A pod's log once its script printed its last line (``done``); None before (for ``wait_for``)."""
    text = log_of(kube, namespace, name)
    return text if text.endswith("done\n") else None


def seen_uuids(log: str) -> list[str]:
    """The GPU and MIG UUIDs a container read from its identity mounts, sorted."""
    return sorted(line for line in log.splitlines() if line.startswith(("GPU-", "MIG-")))


def seen_device_nodes(log: str) -> set[str]:
    """The ``/dev/nvidia*`` names a container saw."""
    return {line[4:] for line in log.splitlines() if line.startswith("dev:")}


def seen_env(log: str) -> list[str]:
    """The IDs in ``NVIDIA_VISIBLE_DEVICES`` as the container saw it, sorted."""
    for line in log.splitlines():
        if line.startswith("env:"):
            return sorted(v for v in line[4:].split(",") if v)
    return []


def cleanup(kube: KubeClient, node: RealNode, namespace: str, bridge: Any, *specs: Path) -> None:
    """Delete the namespace's pods (and wait), take the node out of DRA mode, stop the bridge,
    delete its slices and remove ``specs``."""
    for kind, group in (("deployments", "apps/v1"), ("pods", "v1")):
        for obj in kube.list(api_path(group, kind, namespace)):
            kube.delete(api_path(group, kind, namespace, obj["metadata"]["name"]), ignore_missing=True)
    wait_for(lambda: not kube.list(api_path("v1", "pods", namespace)), 60, "pods gone")
    set_mode(kube, node.name, None)
    if bridge is not None:
        bridge.stop()
    for s in our_slices(kube, node.name):
        kube.delete(api_path(V1, "resourceslices", name=s["metadata"]["name"]), ignore_missing=True)
    for spec in specs:
        spec.unlink(missing_ok=True)
