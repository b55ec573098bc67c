"""Render the internal claim form as ResourceClaimTemplates of any served API version.

Internal form (API-version free; what template names are hashed from)::

    {"requests": [{"name": "app-gpu", "deviceClassName": "nvidia-gpu.dra-bridge.io",
                   "count": 2, "selectors": ["<CEL>", ...]}, ...]}

Shapes (design decision 7; /shared/reference/dra-api.md 1.2):
    resource.k8s.io/v1, v1beta2   requests[].exactly.{deviceClassName, count, allocationMode, selectors}
    resource.k8s.io/v1beta1       the same fields flat on requests[]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from translate.errors import ApiVersionError

API_VERSIONS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")
#: The Kubernetes minor release that introduced each version: what a target serving only
#: that version can be assumed to run (used for CEL library availability).
MINOR_FOR_VERSION = {"resource.k8s.io/v1": 34, "resource.k8s.io/v1beta2": 33, "resource.k8s.io/v1beta1": 32}
MANAGED_BY = "app.kubernetes.io/managed-by"
CONVERTED_LABEL = "dra-bridge.io/converted"


def normalize_api_version(value: str) -> str:
    """Accept ``v1`` or ``resource.k8s.io/v1`` (and the beta versions); raise ApiVersionError otherwise."""
    full = value if "/" in value else f"resource.k8s.io/{value}"
    if full not in API_VERSIONS:
        raise ApiVersionError(f"unsupported resource.k8s.io version {value!r} (one of: v1, v1beta2, v1beta1)")
    return full


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


def render_template(internal: Mapping[str, Any], name: str, namespace: str | None, api_version: str,
                    managed_by: str) -> dict[str, Any]:
    """A ResourceClaimTemplate object for ``internal`` in ``api_version``.

    Its generated claims carry the ``dra-bridge.io/converted`` label so they can be found.
    """
    metadata: dict[str, Any] = {"name": name, "labels": {MANAGED_BY: managed_by}}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata,
        "spec": {
            "metadata": {"labels": {CONVERTED_LABEL: "true"}},
            "spec": {"devices": {"requests": [_request(r, api_version) for r in internal["requests"]]}},
        },
    }


def internal_from_template(template: Mapping[str, Any]) -> dict[str, Any]:
    """Read a rendered template of any version back into the internal form (for tests and
    for comparing a stored template with the wanted one)."""
    requests = []
    for req in template["spec"]["spec"]["devices"]["requests"]:
        body = req.get("exactly", req)
        requests.append({
            "name": req["name"],
            "deviceClassName": body["deviceClassName"],
            "count": int(body.get("count", 1)),
            "selectors": [s["cel"]["expression"] for s in body.get("selectors") or []],
        })
    return {"requests": requests}
