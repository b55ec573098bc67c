"""A small synchronous JSON client for the Kubernetes API, plus helpers for e2e tests.

Synchronous (the tests are), over ``http.client`` with the kubeconfig's client certificate,
for what the product never calls (namespaces, nodes, RBAC, webhook configurations, status
writes by hand). The rest is the shared layer's: paths from :func:`kube.resources.api_path`,
and answers raised as :mod:`kube.errors` (``NotFound``, ``AlreadyExists``, ``Invalid``, ...).
Other test modules import it: ``from tests.e2e.kubeapi import KubeClient, wait_for, ...``.
"""

from __future__ import annotations

import http.client
import json
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from dra_bridge.kube.errors import KubeError, NotFound, from_status
from dra_bridge.kube.resources import api_path

__all__ = [
    "KubeClient",
    "WaitTimeout",
    "api_path",
    "create_fake_node",
    "create_namespace",
    "wait_for",
    "wait_for_object",
]

T = TypeVar("T")
Obj = dict[str, Any]
ObjList = list[Obj]

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


class KubeClient:
    """Synchronous JSON REST client authenticated by a client certificate."""

    def __init__(
        self,
        server: str,
        ca_file: Path | str,
        cert_file: Path | str,
        key_file: Path | str,
        timeout: float = 30.0,
    ) -> None:
        url = urllib.parse.urlsplit(server)
        if url.scheme != "https" or not url.hostname:
            raise ValueError(f"expected an https:// server URL, got {server!r}")
        self.server = server
        self._host = url.hostname
        self._port = url.port or 443
        self._timeout = timeout
        self._ctx = ssl.create_default_context(cafile=str(ca_file))
        self._ctx.load_cert_chain(str(cert_file), str(key_file))

    # -- raw requests -------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: Mapping[str, str | int | bool] | None = None,
    ) -> Any:
        """Sends one request; returns the decoded JSON answer or raises :class:`kube.errors.KubeError`."""
        if query:
            items = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in query.items()}
            path = f"{path}?{urllib.parse.urlencode(items)}"
        headers = {"Accept": "application/json"}
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        conn = http.client.HTTPSConnection(self._host, self._port, context=self._ctx, timeout=self._timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            decoded: Any = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        if resp.status >= 300:
            raise from_status(f"{method} {path}", resp.status, decoded)
        return decoded

    # -- verbs --------------------------------------------------------------------------

    def get(self, path: str) -> Obj:
        result: Obj = self.request("GET", path)
        return result

    def list(
        self,
        path: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjList:
        query: dict[str, str | int | bool] = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        items: ObjList = self.request("GET", path, query=query)["items"]
        return items

    def create(self, path: str, obj: Obj, *, dry_run: bool = False) -> Obj:
        query: dict[str, str | int | bool] = {"dryRun": "All"} if dry_run else {}
        result: Obj = self.request("POST", path, obj, query=query)
        return result

    def replace(self, path: str, obj: Obj) -> Obj:
        result: Obj = self.request("PUT", path, obj)
        return result

    def patch(
        self,
        path: str,
        patch: Obj | ObjList,
        patch_type: str = "merge",
        *,
        field_manager: str = "dra-bridge-tests",
    ) -> Obj:
        """``patch_type``: ``merge``, ``strategic``, ``json`` (RFC 6902) or ``apply``."""
        query: dict[str, str | int | bool] = {"fieldManager": field_manager}
        if patch_type == "apply":
            query["force"] = True
        result: Obj = self.request("PATCH", path, patch, content_type=PATCH_TYPES[patch_type], query=query)
        return result

    def delete(self, path: str, *, ignore_missing: bool = False) -> Obj | None:
        try:
            result: Obj = self.request("DELETE", path)
        except NotFound:
            if ignore_missing:
                return None
            raise
        return result

    def get_status(self, path: str) -> Obj:
        return self.get(f"{path}/status")

    def patch_status(self, path: str, patch: Obj | ObjList, patch_type: str = "merge") -> Obj:
        return self.patch(f"{path}/status", patch, patch_type)

    def replace_status(self, path: str, obj: Obj) -> Obj:
        return self.replace(f"{path}/status", obj)

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
        except NotFound:
            return False
        return True


# -- waiting ------------------------------------------------------------------------------


class WaitTimeout(AssertionError):
    """``wait_for`` ran out of time; the message shows the last observed state."""


def _show(value: Any, limit: int = 4000) -> str:
    try:
        text = json.dumps(value, indent=1, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "\n... (truncated)"


def wait_for(
    condition: Callable[[], T | None],
    timeout: float = 30.0,
    description: str = "condition",
    *,
    interval: float = 0.2,
    observe: Callable[[], Any] | None = None,
) -> T:
    """Polls ``condition`` until it returns a truthy value and returns that value.

    A :class:`kube.errors.KubeError` raised by ``condition`` counts as "not yet". On timeout raises
    :class:`WaitTimeout` showing the last value or error, and ``observe()`` if given.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            value = condition()
            if value:
                return value
            last = value
        except KubeError as err:
            last = err
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    msg = f"timed out after {timeout:.0f}s waiting for {description}; last observed: {_show(last)}"
    if observe is not None:
        try:
            msg += f"\nstate: {_show(observe())}"
        except Exception as err:  # the report must not hide the timeout
            msg += f"\nstate: <unavailable: {err}>"
    raise WaitTimeout(msg)


def wait_for_object(
    client: KubeClient,
    path: str,
    predicate: Callable[[Obj], Any],
    timeout: float = 30.0,
    description: str | None = None,
) -> Obj:
    """GETs ``path`` until ``predicate(obj)`` is truthy; shows the last object on timeout."""
    seen: list[Obj] = []

    def check() -> Obj | None:
        obj = client.get(path)
        seen[:] = [obj]
        return obj if predicate(obj) else None

    return wait_for(
        check,
        timeout,
        description or f"{path} to satisfy the predicate",
        observe=lambda: seen[0] if seen else None,
    )


# -- cluster fixtures: namespaces and kubelet-less nodes ----------------------------------


#: GPU Feature Discovery labels of a node with one kind of NVIDIA GPU.
def gfd_labels(product: str = "NVIDIA-H100-80GB-HBM3", count: int = 8) -> dict[str, str]:
    return {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": "81559",
        "nvidia.com/cuda.driver.major": "570",
    }


def create_namespace(client: KubeClient, name: str, *, wait_ready: bool = True) -> Obj:
    """Creates a namespace; waits for its ``default`` service account (pods need it)."""
    ns = client.create(api_path("v1", "namespaces"), {"metadata": {"name": name}})
    if wait_ready:
        wait_for(
            lambda: client.exists(api_path("v1", "serviceaccounts", name, "default")),
            30,
            f"service account {name}/default (created by the controller-manager)",
        )
    return ns


def create_fake_node(
    client: KubeClient,
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
    taints: ObjList | None = None,
) -> Obj:
    """Creates a kubelet-less Node that the scheduler can use.

    The node gets ``capacity``/``allocatable`` (default 16 CPUs, 64Gi, 110 pods plus
    whatever is passed) and a Ready condition through the status subresource. The
    TaintNodesByCondition admission plugin adds ``node.kubernetes.io/not-ready:NoSchedule`` at
    creation; it is removed here (no node-lifecycle controller runs to add it back), leaving
    only ``taints``.
    """
    all_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        **(labels or {}),
    }
    path = api_path("v1", "nodes", name=name)
    client.create(api_path("v1", "nodes"), {"metadata": {"name": name, "labels": all_labels}})
    cap = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi", **(capacity or {})}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    client.patch_status(
        path,
        {
            "status": {
                "capacity": cap,
                "allocatable": {**cap, **(allocatable or {})},
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "fake node (no kubelet)",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
                "nodeInfo": {
                    "kubeletVersion": "v0.0.0-fake",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                    "containerRuntimeVersion": "fake://0",
                    "kernelVersion": "",
                    "osImage": "",
                    "kubeProxyVersion": "",
                    "machineID": "",
                    "systemUUID": "",
                    "bootID": "",
                },
            }
        },
        "strategic",
    )
    node = client.patch(path, {"spec": {"taints": list(taints or []) or None}}, "merge")
    return node
