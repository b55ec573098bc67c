"""Render the internal claim form as ResourceClaimTemplates of any served API version.

Internal form (API-version free; what template names are hashed from)::

    {"requests": [{"name": "app-gpu", "deviceClassName": "nvidia-gpu.dra-bridge.io",
                   "count": 2, "selectors": ["<CEL>", ...]}, ...],
     "constraints": [{"requests": ["app-gpu", ...], "matchAttribute": "<domain>/<name>"}]}

``constraints`` is present only when there are some (topology alignment,
:mod:`~translate.plan.alignment`), so templates without them keep their names.

Shapes (docs/design.md D7; https://github.com/kubernetes/api/blob/master/resource/v1beta1/types.go):
    resource.k8s.io/v1, v1beta2   requests[].exactly.{deviceClassName, count, allocationMode, selectors}
    resource.k8s.io/v1beta1       the same fields flat on requests[]
    every version                 devices.constraints[].{requests, matchAttribute}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra_bridge.translate.names import CONVERTED_LABEL, MANAGED_BY


def _request(req: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "deviceClassName": req["deviceClassName"],
        "allocationMode": "ExactCount",
        "count": req["count"],
    }
    if req.get("selectors"):
        body["selectors"] = [{"cel": {"expression": e}} for e in req["selectors"]]
    if api_version == "resource.k8s.io/v1beta1":
        return {"name": req["name"], **body}
    return {"name": req["name"], "exactly": body}


def render_template(
    internal: Mapping[str, Any], name: str, namespace: str | None, api_version: str, managed_by: str
) -> dict[str, Any]:
    """A ResourceClaimTemplate object for ``internal`` in ``api_version``.

    Its generated claims carry the ``dra-bridge.io/converted`` label so they can be found.
    """
    metadata: dict[str, Any] = {"name": name, "labels": {MANAGED_BY: managed_by}}
    devices: dict[str, Any] = {"requests": [_request(r, api_version) for r in internal["requests"]]}
    if internal.get("constraints"):
        devices["constraints"] = [
            {"requests": list(c["requests"]), "matchAttribute": c["matchAttribute"]} for c in internal["constraints"]
        ]
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata,
        "spec": {
            "metadata": {"labels": {CONVERTED_LABEL: "true"}},
            "spec": {"devices": devices},
        },
    }


def internal_from_template(template: Mapping[str, Any]) -> dict[str, Any]:
    """Read a rendered template of any version back into the internal form (for tests and
    for comparing a stored template with the wanted one)."""
    requests = []
    for req in template["spec"]["spec"]["devices"]["requests"]:
        body = req.get("exactly", req)
        requests.append(
            {
                "name": req["name"],
                "deviceClassName": body["deviceClassName"],
                "count": int(body.get("count", 1)),
                "selectors": [s["cel"]["expression"] for s in body.get("selectors") or []],
            }
        )
    constraints = [
        {"requests": list(c.get("requests") or []), "matchAttribute": c["matchAttribute"]}
        for c in template["spec"]["spec"]["devices"].get("constraints") or []
    ]
    return {"requests": requests, **({"constraints": constraints} if constraints else {})}
