"""What the allocator writes into ``status.allocation``: results, config and the node selector.

Pure (no I/O) apart from fresh random shareIDs (``uuid4``, as upstream's ``GenerateShareID``).
Shapes (resource.k8s.io/v1 ``AllocationResult``; k8s.io/dynamic-resource-allocation
``structured/internal/experimental`` ``Allocate`` and ``createNodeSelector``):

- ``devices.results[]``: ``{request, driver, pool, device}`` plus ``adminAccess: true`` for an
  adminAccess request, ``tolerations`` (the request's, when it has any), ``bindingConditions``
  and ``bindingFailureConditions`` (the device's, when the gates are on), ``shareID`` and
  ``consumedCapacity`` (devices that allow multiple allocations); ``request`` is
  ``request/subrequest`` for a firstAvailable request;
- ``devices.config[]``: each used class's config once (``source: FromClass``, ``requests``
  the requests, or ``request/subrequest``, that used the class), then the claim's config
  entries (``source: FromClaim``, ``requests`` as written): one without ``requests`` once, one
  with ``requests`` once for each request of the claim it names (by the request's name or its
  chosen ``request/subrequest``), as upstream appends them;
- ``nodeSelector``: a device with ``nodeName`` (or ``bindsToNode``) pins the allocation to
  that node (``matchFields metadata.name In [node]``); otherwise the one-term node selectors
  of the devices' slices (or of the devices, with per-device node selection) are merged into
  one term, requirements de-duplicated; devices for all nodes add nothing; no requirement
  at all means no ``nodeSelector`` (the allocation is usable everywhere).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.alloc.capacity import Amount
from dra_bridge.translate.alloc.features import Features
from dra_bridge.translate.alloc.node_match import Node
from dra_bridge.translate.alloc.pools import Candidate, DeviceID

__all__ = ["Picked", "Request", "allocation_result"]


@dataclass(eq=False)
class Request:
    """A request (or one subrequest) as the allocator works with it."""

    name: str
    parent: str
    class_name: str
    device_class: Mapping[str, Any]
    selectors: list[Mapping[str, Any]]
    mode: str
    count: int
    admin: bool
    tolerations: list[Mapping[str, Any]]
    capacity: dict[str, Any]
    key: tuple[int, ...]
    all_devices: list[Candidate] = field(default_factory=list)
    matches: dict[DeviceID, bool] = field(default_factory=dict)
    selector_key: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


@dataclass(eq=False)
class Picked:
    """One device taken for a request; ``consumed`` is set for a device allocated many times."""

    request: Request
    device: Candidate
    consumed: dict[str, Amount] | None


def _result(picked: Picked, features: Features) -> dict[str, Any]:
    request, device = picked.request, picked.device
    out: dict[str, Any] = {
        "request": request.full_name,
        "driver": device.id[0],
        "pool": device.id[1],
        "device": device.id[2],
    }
    if request.admin:
        out["adminAccess"] = True
    if request.tolerations:
        out["tolerations"] = [dict(t) for t in request.tolerations]
    if features.binding_conditions:
        for key in ("bindingConditions", "bindingFailureConditions"):
            if device.spec.get(key):
                out[key] = list(device.spec[key])
    if picked.consumed is not None:
        out["shareID"] = str(uuid.uuid4())
        out["consumedCapacity"] = {name: text for name, (_, text) in sorted(picked.consumed.items())}
    return out


def _config(
    spec: Mapping[str, Any], requests: Sequence[Sequence[Request]], subrequests: Sequence[bool], selected: Sequence[int]
) -> list[dict[str, Any]]:
    chosen = [entry[selected[i]] if subrequests[i] else entry[0] for i, entry in enumerate(requests)]
    out: list[dict[str, Any]] = []
    by_class: dict[str, list[dict[str, Any]]] = {}
    for request in chosen:
        if request.class_name in by_class:
            for entry in by_class[request.class_name]:
                entry["requests"].append(request.full_name)
            continue
        entries = [
            {"source": "FromClass", "requests": [request.full_name], **dict(config)}
            for config in request.device_class.get("config") or []
        ]
        by_class[request.class_name] = entries
        out += entries
    for config in (spec.get("devices") or {}).get("config") or []:
        names = list(config.get("requests") or [])
        body = {k: v for k, v in config.items() if k != "requests"}
        if not names:
            out.append({"source": "FromClaim", **body})
            continue
        for request in chosen:  # once per request it names (upstream appends it per request)
            base = request.parent or request.name
            if base in names or (request.parent and request.full_name in names):
                out.append({"source": "FromClaim", "requests": names, **body})
    return out


def _requirement_key(requirement: Mapping[str, Any]) -> tuple[Any, ...]:
    return (requirement.get("key"), requirement.get("operator"), frozenset(requirement.get("values") or []))


def node_selector(picked: Sequence[Picked], node: Node) -> dict[str, Any] | None:
    """createNodeSelector for the devices of one claim."""
    term: dict[str, list[Any]] = {"matchFields": [], "matchExpressions": []}
    for item in picked:
        source = item.device.spec if item.device.slice.per_device else item.device.slice.spec
        name = source.get("nodeName")
        if item.device.spec.get("bindsToNode"):
            name = node.name
        if name:
            return {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]
            }
        selector = source.get("nodeSelector")
        terms = (selector or {}).get("nodeSelectorTerms") or []
        if len(terms) > 1:
            raise ValueError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        for one in terms:
            for kind in ("matchFields", "matchExpressions"):
                known = {_requirement_key(r) for r in term[kind]}
                term[kind] += [dict(r) for r in one.get(kind) or [] if _requirement_key(r) not in known]
    compact = {kind: reqs for kind, reqs in term.items() if reqs}
    return {"nodeSelectorTerms": [compact]} if compact else None


def allocation_result(
    spec: Mapping[str, Any],
    requests: Sequence[Sequence[Request]],
    subrequests: Sequence[bool],
    selected: Sequence[int],
    picked: Sequence[Picked],
    node: Node,
    features: Features,
) -> dict[str, Any]:
    """The ``status.allocation`` of one claim."""
    devices: dict[str, Any] = {"results": [_result(p, features) for p in picked]}
    config = _config(spec, requests, subrequests, selected)
    if config:
        devices["config"] = config
    out: dict[str, Any] = {"devices": devices}
    selector = node_selector(picked, node)
    if selector is not None:
        out["nodeSelector"] = selector
    return out
