"""Object factories for translate tests (style.md item 17)."""

from __future__ import annotations

from typing import Any


def make_container(name: str, limits: dict[str, Any] | None = None, requests: dict[str, Any] | None = None,
                   restart_policy: str | None = None) -> dict[str, Any]:
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


def make_pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None, name: str = "p",
             namespace: str = "team-a", **spec: Any) -> dict[str, Any]:
    """A v1 Pod with containers, optional init containers and extra spec fields."""
    body: dict[str, Any] = {"containers": containers, **spec}
    if init:
        body["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": body}


def gpu(n: Any, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    """A limits block with ``n`` of ``resource``."""
    return {resource: n}
