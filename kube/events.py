"""core/v1 Events: one builder for every service.

    event(involved, reason=, message=, component=, namespace=, type="Normal", now=, generate_name=) -> body
    await post_event(api, body)                       create it in ``metadata.namespace``

``involved`` is an object reference (apiVersion, kind, name, uid, and namespace for a
namespaced object). The server names it from ``generate_name`` (default ``<involved
name>.<component>-``); the message is cut at 1024 characters.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.resources import EVENTS

MESSAGE_LIMIT = 1024


def event(
    involved: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    component: str,
    namespace: str,
    type: str = "Normal",
    now: datetime.datetime | None = None,
    generate_name: str = "",
) -> dict[str, Any]:
    """A core/v1 Event about ``involved`` (see the module docstring)."""
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    ref = {k: involved.get(k) for k in ("apiVersion", "kind", "name", "uid", "namespace") if involved.get(k)}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "generateName": generate_name or f"{str(involved.get('name') or 'object')[:200]}.{component}-",
            "namespace": namespace,
        },
        "involvedObject": ref,
        "reason": reason,
        "message": message[:MESSAGE_LIMIT],
        "type": type,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": component,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


async def post_event(api: KubeApi, body: Mapping[str, Any]) -> None:
    """Create ``body`` (built by :func:`event`) in its namespace; raises KubeError."""
    await api.create(EVENTS, dict(body), str(body["metadata"]["namespace"]))
