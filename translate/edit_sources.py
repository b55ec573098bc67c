"""Where a device's container edits come from, and which devices can be prepared at all (pure).

docs/design.md D10, in order: the vendor's toolkit CDI device (NVIDIA: ``nvidia.com/gpu=<UUID>``,
:func:`translate.cdi.toolkit_cdi_id`, which must resolve in the node's CDI specs), else the
device plugin's Allocate answer recorded while legacy (its composing part,
:mod:`translate.allocate_edits`), else the catalog's static recipe (``edits`` of the entry,
:mod:`translate.catalog_edits`). A device with none of them cannot be prepared, so
:func:`preparable` keeps it out of the ResourceSlices (publishing it would strand its pods in
ContainerCreating) with a warning that names the resource and why. A toolkit CDI device that
resolved at an earlier publish and no longer does is a health fact, not a missing source: the device
stays (``resolved_before``, :func:`remembering`) and the health rule taints it (docs/design.md D42).

Shapes: ``recorded`` maps a legacy resource name to its :class:`ResourceEdits`
(``{"devices": {device ID: containerEdits}, "dropped": [why]}``); ``resolves`` maps toolkit CDI
IDs to whether they resolve.

Edits that would let a container escape (:mod:`translate.edit_escape`) are never a source: a device
whose recorded answer holds one, or whose device ID is not a plain name, has no edits (no fallback
to the recipe: the plugin said the device needs them) and is not published, with a warning naming
the device (:func:`refusal`; docs/design.md D38).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from dra_bridge.translate.allocate_edits import ResourceEdits
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.catalog_edits import DeviceEdits, recipe_edits
from dra_bridge.translate.cdi import EditsLookup, toolkit_cdi_id
from dra_bridge.translate.edit_escape import IsBlock, escape_refusals, plain_name
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.drm import DrmNode, identity, missing_kinds, nodes_for, refresh

Identities = Mapping[str, Mapping[str, str]]
"""resource -> device ID -> PCI address, recorded with the inventory."""


def refusal(
    resource: str, device_id: str, recorded: Mapping[str, ResourceEdits], is_block: IsBlock | None = None
) -> str:
    """Why a device's edits may not be written (empty: they may): its device ID is not a plain
    name, or its recorded Allocate edits would let the container escape."""
    if not plain_name(device_id):
        return f"device ID {device_id!r} is not a plain name (it would become part of a path)"
    found = recorded.get(resource)
    kept = found["devices"].get(device_id) if found is not None else None
    refusals = escape_refusals(kept, is_block) if kept else []
    if refusals:
        return "its device plugin's Allocate answer would let the container escape: " + "; ".join(refusals)
    return ""


def device_edits(
    resource: str,
    device_id: str,
    recorded: Mapping[str, ResourceEdits],
    catalog: Catalog,
    is_block: IsBlock | None = None,
    drm: Sequence[DrmNode] = (),
    recorded_identities: Identities | None = None,
) -> DeviceEdits | None:
    """The recorded Allocate edits of a device when they hold anything, else the catalog's
    static recipe for its resource, else None (NVIDIA devices: see :func:`preparable`; a device
    with a :func:`refusal`: None). DRM nodes come from ``drm`` (the host's, now) by the device's
    PCI address (:mod:`translate.inventory.drm`): a recorded answer's are replaced by the current
    ones, a recipe's ``drmNodes`` are looked up; a recipe whose device has none of a kind: None.
    The PCI address is the one recorded with the inventory (``recorded_identities``) where there
    is one, else what the device ID names now."""
    if refusal(resource, device_id, recorded, is_block):
        return None
    pci = (recorded_identities or {}).get(resource, {}).get(device_id) or identity(device_id, drm)
    found = recorded.get(resource)
    kept = found["devices"].get(device_id) if found is not None else None
    if kept:
        return DeviceEdits("allocate", {}, refresh(kept, pci, drm), pci)
    mapping = catalog.lookup(resource)
    recipe = mapping.edits.recipe if mapping is not None and mapping.edits is not None else None
    if recipe is None or recipe.empty:
        return None
    spec, device = recipe_edits(recipe, device_id)
    if recipe.drm_nodes:
        if not pci or missing_kinds(pci, drm, recipe.drm_nodes):
            return None
        listed = device.get("deviceNodes")
        nodes = [*(listed if isinstance(listed, list) else []), *nodes_for(pci, drm, recipe.drm_nodes)]
        device = {**device, "deviceNodes": nodes}
    if escape_refusals(spec) or escape_refusals(device):
        return None
    return DeviceEdits("recipe", spec, device, pci if recipe.drm_nodes else "")


def identities(devices: Sequence[InventoryDevice], drm: Sequence[DrmNode]) -> dict[str, dict[str, str]]:
    """The PCI address each device ID names now (where sysfs tells), to record with the inventory."""
    out: dict[str, dict[str, str]] = {}
    for d in devices:
        if pci := identity(d["deviceID"], drm):
            out.setdefault(d["resourceName"], {})[d["deviceID"]] = pci
    return out


def lookup(
    recorded: Callable[[], Mapping[str, ResourceEdits]],
    catalog: Catalog,
    drm: Callable[[], Sequence[DrmNode]] = tuple,
    recorded_identities: Callable[[], Identities] = dict,
) -> EditsLookup:
    """:func:`device_edits` over what ``recorded()``, ``drm()`` (the host's DRM nodes) and
    ``recorded_identities()`` hold at the time of each call."""
    return lambda resource, device_id: device_edits(
        resource, device_id, recorded(), catalog, None, drm(), recorded_identities()
    )


Resolve = Callable[[list[str]], Mapping[str, bool]]
"""Toolkit CDI IDs -> whether each resolves in the node's CDI specs now."""


def remembering(resolve: Resolve, seen: set[str]) -> Resolve:
    """``resolve``, adding each ID that resolves to ``seen`` (the ``resolved_before`` of later calls)."""

    def remember(ids: list[str]) -> Mapping[str, bool]:
        found = resolve(ids)
        seen.update(i for i, ok in found.items() if ok)
        return found

    return remember


def preparable(
    devices: Sequence[InventoryDevice],
    catalog: Catalog,
    recorded: Mapping[str, ResourceEdits],
    resolve: Resolve | None,
    is_block: IsBlock | None = None,
    drm: Sequence[DrmNode] = (),
    recorded_identities: Identities | None = None,
    resolved_before: Collection[str] = (),
) -> tuple[list[InventoryDevice], list[str]]:
    """The devices that have an edit source, in order, and one warning per resource whose
    devices do not (naming the resource, how many, and why), one per refused device (naming it,
    :func:`refusal`). ``resolve`` says which toolkit CDI IDs resolve (None: not checked, e.g. no
    CDI directory to look in); one that does not resolve now but is in ``resolved_before`` (it did
    at an earlier call) is kept: that is the health rule's (an unhealthy device, tainted)."""
    toolkit_ids = [t for d in devices if (t := toolkit_cdi_id(d["resourceName"], d["deviceID"]))]
    resolves = resolve(toolkit_ids) if resolve is not None else None
    kept: list[InventoryDevice] = []
    withheld: dict[str, tuple[int, str]] = {}
    refused: list[str] = []
    for d in devices:
        resource, device_id = d["resourceName"], d["deviceID"]
        toolkit = toolkit_cdi_id(resource, device_id)
        why = ""
        refused_why = "" if toolkit is not None else refusal(resource, device_id, recorded, is_block)
        if refused_why:
            refused.append(f"resource {resource}: device {device_id} not published: {refused_why}")
            continue
        if toolkit is not None:
            if resolves is not None and not resolves.get(toolkit) and toolkit not in resolved_before:
                why = (
                    f"its container toolkit CDI device ({toolkit}) is defined by no spec in the node's "
                    "CDI directories (dra-bridge --cdi-dir), and its device plugin's only recipe is the list-valued "
                    "NVIDIA_VISIBLE_DEVICES (run nvidia-ctk cdi generate, or the GPU Operator's toolkit "
                    "with CDI on)"
                )
        elif device_edits(resource, device_id, recorded, catalog, is_block, drm, recorded_identities) is None:
            found = recorded.get(resource)
            dropped = found["dropped"] if found is not None else []
            answer = (
                f"its device plugin's recorded Allocate answer held nothing that composes (dropped: "
                f"{'; '.join(dropped)})"
                if resource in recorded
                else "no Allocate answer was recorded"
            )
            why = (
                f"no edit source: {answer}, and the catalog has no static recipe for it that applies (none, "
                "or sysfs shows no DRM card or render node for its PCI address)"
            )
        if why:
            count, _ = withheld.get(resource, (0, why))
            withheld[resource] = (count + 1, why)
        else:
            kept.append(d)
    warnings = [f"resource {r}: {n} device(s) not published: {why}" for r, (n, why) in sorted(withheld.items())]
    return kept, refused + warnings
