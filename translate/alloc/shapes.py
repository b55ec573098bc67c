"""resource.k8s.io documents as the allocator reads them: checked, and converted to the v1 shape.

Pure (no I/O); inputs are never modified (new dicts are returned). Accepted versions:
``resource.k8s.io/v1``, ``v1beta2`` (the same shapes as v1 for everything read here) and
``v1beta1`` (https://github.com/kubernetes/api/blob/master/resource/v1beta1/types.go; docs/design.md D7):

- a v1beta1 claim request is flat: ``{name, deviceClassName, selectors, allocationMode,
  count, adminAccess, tolerations, capacity}`` becomes ``{name, exactly: {...}}``; a request
  with ``firstAvailable`` keeps only ``name`` and ``firstAvailable``;
- a v1beta1 device is ``{name, basic: {...}}``: the ``basic`` fields move onto the device;
- v1beta1 ``nodeName: ""`` and ``allNodes: false`` mean unset and are dropped.

Defaults applied as the API server applies them: ``allocationMode`` ``ExactCount``, ``count``
1 for ExactCount, toleration ``operator`` ``Equal``.

Errors: :class:`translate.errors.InputError` naming the object (``ResourceClaim ns/name``),
the field path and the rule, e.g. ``ResourceClaim default/c: spec.devices.requests[0].name:
must be a non-empty string``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from dra_bridge.translate.errors import InputError
from dra_bridge.translate.names import API_VERSIONS

__all__ = ["DRA_KINDS", "claim_spec", "class_spec", "object_label", "slice_spec"]

DRA_KINDS: Final = frozenset({"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"})
_EXACT_FIELDS: Final = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


def object_label(obj: Mapping[str, Any]) -> str:
    """``Kind ns/name`` (``Kind name`` when cluster-scoped)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    ns = meta.get("namespace")
    name = meta.get("name") or "<unnamed>"
    return f"{obj.get('kind', '?')} {f'{ns}/' if ns else ''}{name}"


def _version(obj: Mapping[str, Any], label: str) -> str:
    version = obj.get("apiVersion")
    if version not in API_VERSIONS:
        raise InputError(f"{label}: apiVersion {version!r}: must be one of {', '.join(API_VERSIONS)}")
    return str(version)


def _map(value: Any, where: str, *, optional: bool = True) -> dict[str, Any]:
    if value is None and optional:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: must be an object")
    return dict(value)


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: must be a list")
    return value


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}: must be a non-empty string")
    return value


def _int(value: Any, where: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: must be an integer")
    return value


def _selectors(value: Any, where: str) -> list[dict[str, Any]]:
    out = []
    for i, selector in enumerate(_list(value, where)):
        selector = _map(selector, f"{where}[{i}]", optional=False)
        cel = selector.get("cel")
        if cel is not None:
            cel = _map(cel, f"{where}[{i}].cel", optional=False)
            if not isinstance(cel.get("expression"), str):
                raise InputError(f"{where}[{i}].cel.expression: must be a string")
        out.append(selector)
    return out


def _exact(body: Mapping[str, Any], where: str, *, sub: bool) -> dict[str, Any]:
    exact = {key: body[key] for key in _EXACT_FIELDS if body.get(key) is not None}
    exact.setdefault("allocationMode", "ExactCount")
    if exact["allocationMode"] == "ExactCount":
        exact["count"] = _int(exact.get("count"), f"{where}.count", 1)
    else:
        exact["count"] = _int(exact.get("count"), f"{where}.count", 0)
    exact["selectors"] = _selectors(exact.get("selectors"), f"{where}.selectors")
    tolerations = []
    for i, toleration in enumerate(_list(exact.get("tolerations"), f"{where}.tolerations")):
        toleration = _map(toleration, f"{where}.tolerations[{i}]", optional=False)
        tolerations.append({"operator": "Equal", **toleration})
    exact["tolerations"] = tolerations
    if not isinstance(exact.get("deviceClassName", ""), str):
        raise InputError(f"{where}.deviceClassName: must be a string")
    if sub:
        exact.pop("adminAccess", None)
    return exact


def claim_spec(obj: Mapping[str, Any], spec: Any, where: str) -> dict[str, Any]:
    """The v1 ``spec`` of a ResourceClaim (or a template's ``spec.spec``), checked.

    ``obj`` is the document (for its apiVersion); ``where`` prefixes error paths
    (``ResourceClaim ns/name: spec``). Returns ``{"devices": {"requests", "constraints",
    "config"}}`` where every request is ``{name, exactly}`` or ``{name, firstAvailable: [...]}``.
    """
    version = _version(obj, where.split(":")[0])
    devices = _map(_map(spec, where).get("devices"), f"{where}.devices")
    requests: list[dict[str, Any]] = []
    for i, request in enumerate(_list(devices.get("requests"), f"{where}.devices.requests")):
        at = f"{where}.devices.requests[{i}]"
        request = _map(request, at, optional=False)
        name = _name(request.get("name"), f"{at}.name")
        first = request.get("firstAvailable")
        if first:
            subs = []
            for j, sub in enumerate(_list(first, f"{at}.firstAvailable")):
                sub = _map(sub, f"{at}.firstAvailable[{j}]", optional=False)
                subs.append(
                    {
                        "name": _name(sub.get("name"), f"{at}.firstAvailable[{j}].name"),
                        **_exact(sub, f"{at}.firstAvailable[{j}]", sub=True),
                    }
                )
            requests.append({"name": name, "firstAvailable": subs})
            continue
        body = request if version.endswith("v1beta1") else request.get("exactly")
        if body is None:
            raise InputError(f"{at}: exactly one of exactly or firstAvailable must be set")
        body = _map(body, f"{at}.exactly", optional=False)
        requests.append({"name": name, "exactly": _exact(body, f"{at}.exactly", sub=False)})
    constraints = [
        _map(c, f"{where}.devices.constraints[{i}]", optional=False)
        for i, c in enumerate(_list(devices.get("constraints"), f"{where}.devices.constraints"))
    ]
    config = [
        _map(c, f"{where}.devices.config[{i}]", optional=False)
        for i, c in enumerate(_list(devices.get("config"), f"{where}.devices.config"))
    ]
    out: dict[str, Any] = {"requests": requests, "constraints": constraints, "config": config}
    return {"devices": out}


def class_spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The v1 ``spec`` of a DeviceClass: ``selectors`` and ``config`` lists, checked."""
    label = object_label(obj)
    _version(obj, label)
    spec = _map(obj.get("spec"), f"{label}: spec")
    return {
        "selectors": _selectors(spec.get("selectors"), f"{label}: spec.selectors"),
        "config": _list(spec.get("config"), f"{label}: spec.config"),
    }


def _device(device: Any, where: str) -> dict[str, Any]:
    device = _map(device, where, optional=False)
    _name(device.get("name"), f"{where}.name")
    basic = device.get("basic")
    flat = {**_map(basic, f"{where}.basic"), "name": device["name"]} if basic is not None else dict(device)
    for key in ("attributes", "capacity"):
        flat[key] = _map(flat.get(key), f"{where}.{key}")
    if flat.get("nodeName") == "":
        flat.pop("nodeName")
    if flat.get("allNodes") is False:
        flat.pop("allNodes")
    return flat


def slice_spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The v1 ``spec`` of a ResourceSlice, checked: driver, pool (name, generation,
    resourceSliceCount), node fields, devices (flattened), sharedCounters."""
    label = object_label(obj)
    _version(obj, label)
    spec = _map(obj.get("spec"), f"{label}: spec", optional=False)
    _name(spec.get("driver"), f"{label}: spec.driver")
    pool = _map(spec.get("pool"), f"{label}: spec.pool", optional=False)
    _name(pool.get("name"), f"{label}: spec.pool.name")
    generation = _int(pool.get("generation"), f"{label}: spec.pool.generation", 0)
    count = _int(pool.get("resourceSliceCount"), f"{label}: spec.pool.resourceSliceCount", 1)
    if count < 1:
        raise InputError(f"{label}: spec.pool.resourceSliceCount: must be at least 1")
    out = dict(spec)
    out["pool"] = {**pool, "generation": generation, "resourceSliceCount": count}
    if out.get("nodeName") == "":
        out.pop("nodeName")
    if out.get("allNodes") is False:
        out.pop("allNodes")
    set_fields = [
        key
        for key in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
        if out.get(key) not in (None, False)
    ]
    if len(set_fields) > 1:
        raise InputError(
            f"{label}: spec: at most one of nodeName, nodeSelector, allNodes and "
            f"perDeviceNodeSelection may be set (found {', '.join(set_fields)})"
        )
    out["devices"] = [
        _device(d, f"{label}: spec.devices[{i}]")
        for i, d in enumerate(_list(spec.get("devices"), f"{label}: spec.devices"))
    ]
    out["sharedCounters"] = _list(spec.get("sharedCounters"), f"{label}: spec.sharedCounters")
    return out
