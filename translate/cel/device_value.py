"""Convert a ResourceSlice device (JSON) into the CEL value of the selector variable ``device``.

Pure (no I/O); never modifies its input. Shapes accepted: resource.k8s.io/v1 and v1beta2
``Device`` (``{"name", "attributes", "capacity", "allowMultipleAllocations"?}``) and
v1beta1 (``{"name", "basic": {...the same fields...}}``).

Rules (https://github.com/kubernetes/dynamic-resource-allocation/blob/master/cel/compile.go):

- ``device.driver`` is the driver name; ``allowMultipleAllocations`` is a bool, false
  when unset.
- attribute and capacity names: a bare ``id`` belongs to the driver's domain; a
  qualified ``domain/id`` is split at its last ``/`` (``parseQualifiedName``).
- ``attributes[domain][id]``: ``int``/``bool``/``string`` give CEL int/bool/string,
  ``version`` a :class:`~translate.cel.quantity_semver.Semver` (strict semver 2.0.0), the alpha
  list forms ``ints``/``bools``/``strings``/``versions`` lists of those. Exactly one
  field must be set.
- ``capacity[domain][id]``: a :class:`~translate.cel.quantity_semver.Quantity` from ``value``
  (a bare quantity string, as in v1alpha3, is accepted too).
- an unknown domain reads as an empty map (compile.go's mapper), so a guarded read
  (``has()``, ``in``) of it is false and an unguarded one is "no such key".

Errors: :class:`translate.errors.SelectorError` naming the device and the field when a
value cannot be converted (the allocator fails the same way: "parse semantic version").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from celpy import celtypes

from dra_bridge.translate.cel.quantity_semver import Quantity, Semver
from dra_bridge.translate.errors import SelectorError, ValueFormatError

__all__ = ["device_label", "device_to_cel"]


class _Domains(celtypes.MapType):
    """Domain map: an unknown domain reads as an empty map (compile.go mapper.Find)."""

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str) and not super().__contains__(key):
            return celtypes.MapType()
        return super().__getitem__(key)


def device_label(device: Mapping[str, Any], driver: str) -> str:
    return f"{driver}/{device.get('name', '<unnamed>')}"


def _split_name(name: str, driver: str) -> tuple[str, str]:
    """``domain/id`` split at the last ``/``; a bare ``id`` belongs to the driver."""
    domain, _, ident = name.rpartition("/")
    return (domain or driver), ident


def _scalar(kind: str, raw: Any, where: str) -> Any:
    if kind in ("bool", "bools") and isinstance(raw, bool):
        return celtypes.BoolType(raw)
    if kind in ("int", "ints") and isinstance(raw, int) and not isinstance(raw, bool):
        return celtypes.IntType(raw)
    if kind in ("string", "strings") and isinstance(raw, str):
        return celtypes.StringType(raw)
    if kind in ("version", "versions") and isinstance(raw, str):
        try:
            return Semver.parse(raw)
        except ValueFormatError as exc:
            raise SelectorError(f"{where}: parse semantic version: {exc}") from exc
    raise SelectorError(f"{where}: {kind} value {raw!r} has the wrong JSON type")


_ATTRIBUTE_KINDS: Final = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")


def _attribute(value: Any, where: str) -> Any:
    if not isinstance(value, Mapping):
        raise SelectorError(f"{where}: a DeviceAttribute must be an object")
    kinds = [kind for kind in _ATTRIBUTE_KINDS if value.get(kind) is not None]
    if len(kinds) != 1:
        raise SelectorError(f"{where}: exactly one of {', '.join(_ATTRIBUTE_KINDS)} must be set")
    kind = kinds[0]
    raw = value[kind]
    if kind.endswith("s"):
        if not isinstance(raw, list):
            raise SelectorError(f"{where}: {kind} must be a list")
        return celtypes.ListType([_scalar(kind, item, where) for item in raw])
    return _scalar(kind, raw, where)


def _capacity(value: Any, where: str) -> Quantity:
    raw = value.get("value") if isinstance(value, Mapping) else value
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        raw = str(raw)
    if not isinstance(raw, str):
        raise SelectorError(f"{where}: capacity value must be a quantity string")
    try:
        return Quantity.parse(raw)
    except ValueFormatError as exc:
        raise SelectorError(f"{where}: {exc}") from exc


def _domains(entries: Any, driver: str, where: str, convert: Any) -> _Domains:
    if entries is None:
        entries = {}
    if not isinstance(entries, Mapping):
        raise SelectorError(f"{where}: must be a map of qualified names")
    grouped: dict[str, dict[str, Any]] = {}
    for name, value in entries.items():
        domain, ident = _split_name(str(name), driver)
        grouped.setdefault(domain, {})[ident] = convert(value, f"{where}[{name!r}]")
    return _Domains(
        {
            celtypes.StringType(domain): celtypes.MapType(
                {celtypes.StringType(ident): item for ident, item in items.items()}
            )
            for domain, items in grouped.items()
        }
    )


def device_to_cel(device: Mapping[str, Any], driver: str) -> Any:
    """The CEL value bound to ``device`` for a v1/v1beta2 or v1beta1 Device JSON object.

    Does not modify ``device``. Raises SelectorError if an attribute or capacity value
    cannot be converted (a version that is not semver, a quantity that does not parse).
    """
    if not isinstance(device, Mapping):
        raise SelectorError(f"device must be an object, not {type(device).__name__}")
    basic = device.get("basic")
    body: Mapping[str, Any] = basic if isinstance(basic, Mapping) else device
    label = device_label(device, driver)
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(driver),
            celtypes.StringType("attributes"): _domains(
                body.get("attributes"), driver, f"device {label} attributes", _attribute
            ),
            celtypes.StringType("capacity"): _domains(
                body.get("capacity"), driver, f"device {label} capacity", _capacity
            ),
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(
                bool(body.get("allowMultipleAllocations") or False)
            ),
        }
    )
