"""Object factories shared by every test layer (docs/design.md D21): containers and pods.

``make_pod()`` alone is the common case of the webhook tests: one container ``main`` asking
for one ``nvidia.com/gpu`` in limits. The translate tests pass their own containers, built
with ``make_container`` and ``gpu``.
"""

from __future__ import annotations

from typing import Any


def make_container(
    name: str,
    limits: dict[str, Any] | None = None,
    requests: dict[str, Any] | None = None,
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """A container with the given resources (omitted blocks stay absent)."""
    c: dict[str, Any] = {"name": name, "image": "registry.example/app:1"}
    res: dict[str, Any] = {}
    if limits is not None:
        res["limits"] = limits
    if requests is not None:
        res["requests"] = requests
    if res:
        c["resources"] = res
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


def gpu(n: Any, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    """A limits block with ``n`` of ``resource``."""
    return {resource: n}


def make_pod(
    containers: list[dict[str, Any]] | None = None,
    *,
    init: list[dict[str, Any]] | None = None,
    gpus: Any = 1,
    name: str | None = "gpu-pod",
    generate_name: str | None = None,
    namespace: str = "team-a",
    **spec: Any,
) -> dict[str, Any]:
    """A v1 Pod in ``namespace`` with extra ``spec`` fields.

    ``containers`` default to one container ``main`` asking for ``gpus`` nvidia.com/gpu in
    limits; ``init`` are its init containers. ``name=None`` with ``generate_name`` gives a pod
    as a controller creates it (no ``metadata.name`` at admission).
    """
    meta: dict[str, Any] = {"namespace": namespace}
    if name:
        meta["name"] = name
    if generate_name:
        meta["generateName"] = generate_name
    if containers is None:
        containers = [{"name": "main", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]
    body: dict[str, Any] = {"containers": containers, **spec}
    if init:
        body["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}
