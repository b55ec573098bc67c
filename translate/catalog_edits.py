"""A catalog entry's ``edits`` block: where the bridge gets a device's container edits (pure).

Shape (every key optional; docs/design.md D10, docs/bridge.md "Where container edits come from")::

    edits:
      allocate:                        # ask the vendor's device plugin while the node is legacy
        sideEffectFree: true           # its Allocate only returns a recipe (read its source first)
        socket: amd.com_gpu            # its socket's file name in <kubelet dir>/device-plugins/
      specDeviceNodes: [/dev/kfd]      # the static recipe: nodes every claim of the vendor gets
      deviceNodes: ["/dev/vendor{id}"] # ... and each device gets
      drmNodes: [card, render]         # ... and the device's DRM nodes, found by its PCI address

In ``deviceNodes`` ``{id}`` is the kubelet's device ID and ``{card}`` its part before the first
``-`` (Intel's ``card0-1`` -> ``card0``). ``drmNodes`` (``card``, ``render``) are the device's DRM
nodes at their canonical paths, derived at each Prepare from its PCI address in sysfs
(:mod:`translate.inventory.drm`, docs/design.md D40). A socket name is taken from the catalog because no
device-plugin RPC names the resource a socket serves
(https://github.com/kubernetes/kubelet/blob/master/pkg/apis/deviceplugin/v1beta1/api.proto). Allocate is
asked only where ``sideEffectFree`` is true: a third party's call is invisible to the kubelet, and
reserves nothing (docs/design.md D6).

:func:`parse_edits` raises :class:`CatalogError` naming the source, the key and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from dra_bridge.translate.errors import CatalogError

PLACEHOLDERS = ("{id}", "{card}")
DRM_KINDS = ("card", "render")
_SOCKET_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")


@dataclass(frozen=True)
class Recipe:
    """A static per-vendor recipe: device nodes for the spec (``spec_nodes``, applied when any
    device of the claim is used) and per device (``device_nodes``, with the placeholders)."""

    spec_nodes: tuple[str, ...] = ()
    device_nodes: tuple[str, ...] = ()
    drm_nodes: tuple[str, ...] = ()
    """DRM node kinds (``card``, ``render``) of the device, found by its PCI address."""

    @property
    def empty(self) -> bool:
        """True when the recipe names no device node at all."""
        return not self.spec_nodes and not self.device_nodes and not self.drm_nodes


@dataclass(frozen=True)
class EditSource:
    """One resource's edit sources: its plugin's socket and whether Allocate may be asked
    (``socket`` empty: never), and its static recipe (None: none)."""

    socket: str = ""
    side_effect_free: bool = False
    recipe: Recipe | None = None

    @property
    def ask_allocate(self) -> bool:
        """Whether the bridge may call this plugin's Allocate while the node is legacy."""
        return self.side_effect_free and bool(self.socket)


def recipe_edits(recipe: Recipe, device_id: str) -> tuple[dict[str, object], dict[str, object]]:
    """(spec-level, per-device) CDI ``containerEdits`` of a recipe for one device."""
    card = device_id.split("-", 1)[0]
    spec: dict[str, object] = {"deviceNodes": [{"path": p} for p in recipe.spec_nodes]} if recipe.spec_nodes else {}
    nodes = [{"path": p.replace("{id}", device_id).replace("{card}", card)} for p in recipe.device_nodes]
    return spec, ({"deviceNodes": nodes} if nodes else {})


def _fail(source: str, key: str, rule: str) -> CatalogError:
    return CatalogError(f"{source}: {key}: {rule}")


def _paths(raw: object, source: str, key: str, placeholders: bool) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(p, str) and p.startswith("/") for p in raw):
        raise _fail(source, key, "must be a list of absolute paths")
    for p in raw:
        rest = p
        for ph in PLACEHOLDERS:
            rest = rest.replace(ph, "")
        if "{" in rest or "}" in rest:
            raise _fail(source, key, f"{p}: the only placeholders are {' and '.join(PLACEHOLDERS)}")
        if not placeholders and rest != p:
            raise _fail(source, key, f"{p}: spec-level nodes are the same for every device: no placeholders")
    return tuple(raw)


def parse_edits(raw: object, source: str, key: str) -> EditSource | None:
    """The ``edits`` block of one entry (None when absent). Raises CatalogError."""
    if raw is None:
        return None
    allowed = {"allocate", "specDeviceNodes", "deviceNodes", "drmNodes"}
    if not isinstance(raw, Mapping):
        raise _fail(source, key, "must be a mapping")
    unknown = sorted(str(k) for k in set(raw) - allowed)
    if unknown:
        raise _fail(source, f"{key}.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(allowed))})")
    spec_nodes = _paths(raw.get("specDeviceNodes"), source, f"{key}.specDeviceNodes", placeholders=False)
    device_nodes = _paths(raw.get("deviceNodes"), source, f"{key}.deviceNodes", placeholders=True)
    drm = raw.get("drmNodes") or []
    if not isinstance(drm, list) or not all(k in DRM_KINDS for k in drm) or len(set(drm)) != len(drm):
        raise _fail(source, f"{key}.drmNodes", f"must be a list of distinct {' and '.join(DRM_KINDS)}")
    recipe = Recipe(spec_nodes, device_nodes, tuple(drm)) if spec_nodes or device_nodes or drm else None
    allocate = raw.get("allocate")
    if allocate is None:
        return EditSource(recipe=recipe)
    if not isinstance(allocate, Mapping) or set(allocate) - {"sideEffectFree", "socket"}:
        raise _fail(source, f"{key}.allocate", "must be a mapping with sideEffectFree and socket")
    side_effect_free, socket = allocate.get("sideEffectFree", False), allocate.get("socket")
    if not isinstance(side_effect_free, bool):
        raise _fail(source, f"{key}.allocate.sideEffectFree", "must be a boolean")
    if not isinstance(socket, str) or not _SOCKET_RE.fullmatch(socket) or socket == "kubelet.sock":
        raise _fail(
            source,
            f"{key}.allocate.socket",
            "must be a socket file name in <kubelet dir>/device-plugins/ (no /, not kubelet.sock)",
        )
    return EditSource(socket, side_effect_free, recipe)


@dataclass(frozen=True)
class DeviceEdits:
    """One device's CDI container edits and where they came from (``source``: ``allocate``, the
    plugin's answer recorded while legacy; ``recipe``, the catalog's static recipe): ``spec``
    goes into the spec-level ``containerEdits`` (merged by path), ``device`` into the device's."""

    source: str
    spec: Mapping[str, object]
    device: Mapping[str, object]
    identity: str = ""
    """The device's PCI address where its edits hold DRM nodes ("" otherwise): the nodes are
    derived from it again whenever a spec is written (docs/design.md D40)."""
