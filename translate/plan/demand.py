"""Legacy device demand of a pod spec: which container asks for which extended resource.

Reads ``resources.limits`` / ``resources.requests`` of app containers, init containers and
native sidecars (init containers with ``restartPolicy: Always``). Extended resources need
limits, and requests, when present, must equal them (core/v1 validation: "Limit must be set
for non overcommitable resources"); a pod that breaks that is invalid and is left alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.catalog import Catalog, ResourceMapping
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.plan.device_counts import MAX_COUNT, parse_count
from dra_bridge.translate.plan.foreign import other_extended_resource, unknown_device_resource
from dra_bridge.translate.plan.request_layout import Role
from dra_bridge.translate.plan.stay_legacy import invalid_quantity, requests_differ_from_limits, requests_without_limits

#: Resource names with a slash that are not device-plugin extended resources.
_NOT_EXTENDED = ("kubernetes.io/", "requests.", "limits.")


@dataclass(frozen=True)
class ContainerDemand:
    """``count`` devices of ``mapping.resource_name`` for one container; ``path`` locates its
    resources (``spec.containers[0].resources``), ``field`` is ``containers`` or
    ``initContainers``, ``index`` its position there."""

    container: str
    role: Role
    field: str
    index: int
    mapping: ResourceMapping
    count: int
    legacy: str
    path: str


def _json_text(value: object) -> str:
    """``json.dumps(value, default=str)``, an int's without the call (how YAML reads ``gpu: 1``)."""
    return int.__repr__(value) if type(value) is int else _JSON(value)


#: ``json.dumps(value, default=str)`` without building an encoder per call.
_JSON = json.JSONEncoder(default=str).encode


def is_extended(name: str) -> bool:
    """True for an extended resource name (``vendor.example/name``) outside kubernetes.io."""
    return "/" in name and not name.startswith(_NOT_EXTENDED) and not name.split("/", 1)[0].endswith("kubernetes.io")


def containers(spec: Mapping[str, Any]) -> list[tuple[str, int, Role, Mapping[str, Any]]]:
    """(field, index, role, container) for every init container and app container."""
    out: list[tuple[str, int, Role, Mapping[str, Any]]] = []
    for i, c in enumerate(spec.get("initContainers") or []):
        if type(c) is dict or isinstance(c, Mapping):
            out.append(("initContainers", i, "sidecar" if c.get("restartPolicy") == "Always" else "init", c))
    for i, c in enumerate(spec.get("containers") or []):
        if type(c) is dict or isinstance(c, Mapping):
            out.append(("containers", i, "app", c))
    return out


def collect(
    spec: Mapping[str, Any],
    catalog: Catalog,
    path: str,
    findings: list[Finding],
    device_domains: Sequence[str] = (),
) -> list[ContainerDemand]:
    """Every catalogued device demand (count may be 0), appending findings for resources the
    catalog does not know (an accelerator's keeps the pod legacy; ``device_domains`` adds
    accelerator domains, :func:`translate.names.is_accelerator_resource`) and invalid quantities."""
    out: list[ContainerDemand] = []
    for fld, index, role, c in containers(spec):
        resources = c.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        if not (type(limits) is dict or isinstance(limits, Mapping)) or not (
            type(requests) is dict or isinstance(requests, Mapping)
        ):
            continue
        rpath = ""
        for name in dict.fromkeys([*limits, *requests]) if requests else limits:
            if not (type(name) is str or isinstance(name, str)) or "/" not in name or not is_extended(name):
                continue
            rpath = rpath or f"{path}spec.{fld}[{index}].resources"
            where = "limits" if name in limits else "requests"
            vpath = f"{rpath}.{where}[{name}]"
            raw = limits.get(name, requests.get(name))
            legacy = f"{name}: {raw if isinstance(raw, str) else _json_text(raw)}"
            mapping = catalog.lookup(name)
            if mapping is None:
                findings.append(
                    unknown_device_resource(name, device_domains, vpath, legacy)
                    or other_extended_resource(name, vpath, legacy)
                )
                continue
            if type(raw) is int and 0 <= raw <= MAX_COUNT and name not in requests:
                count = raw  # in limits only, a count as parse_count reads it: no problem to look for
            else:
                problem = (
                    requests_without_limits(name, limits, vpath, legacy)
                    or invalid_quantity(limits[name], vpath, legacy)
                    or (invalid_quantity(requests[name], vpath, legacy) if name in requests else None)
                    or requests_differ_from_limits(name, limits, requests, vpath, legacy)
                )
                if problem is not None:
                    findings.append(problem)
                    continue
                count = parse_count(limits[name])
            out.append(
                ContainerDemand(
                    str(c.get("name", "")), role, fld, index, mapping, count, legacy, f"{rpath}.limits[{name}]"
                )
            )
    return out
