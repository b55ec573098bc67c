"""What the bridge's DRA kubelet plugin answers for a claim, and the CDI spec it writes (pure).

docs/design.md D10 and D16; the kubelet's DRA API,
https://github.com/kubernetes/kubelet/blob/master/pkg/apis/dra/v1/api.proto; CDI,
https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md:

- **Our results** (:func:`our_results`): a claim the kubelet asks us to prepare must carry the
  UID the kubelet named (else it was replaced), an allocation, and at least one
  ``status.allocation.devices.results[]`` entry whose ``driver`` is ours and whose ``pool`` is
  this node's; results of other drivers are theirs. ``request`` ``main/sub`` is reported as
  ``main`` (:func:`request_name`: the kubelet matches ``request_names`` against the pod's
  requests, which never name a subrequest).
- **Our CDI names** (:func:`device_cdi_id`): kind ``dra-bridge.io/claim`` (vendor
  ``dra-bridge.io``, class ``claim``), which never clashes with the container toolkit's
  ``nvidia.com/gpu`` or the NVIDIA device plugin's ``k8s.device-plugin.nvidia.com/gpu`` (two
  specs at one priority that define one name are both dropped); device names
  ``<claim UID>-<device name>`` (a runtime caches specs: a name is never reused by another
  claim); one file per claim, ``dra-bridge.io-claim_<claim UID>.json`` (:func:`spec_file_name`,
  the CDI transient-spec naming). ``cdiVersion`` is ``0.5.0``, the lowest that allows a device
  name starting with a digit (a UID may) and ``deviceNodes[].hostPath``.
- **Edits compose** (:func:`composition_refusals`): the kubelet hands a container the union of
  its claims' CDI IDs in no fixed order, and CDI env edits of one variable replace each other,
  so no per-device edit may set a list-valued variable (``*_VISIBLE_DEVICES``, ordinals,
  masks, or any value with a comma: :func:`translate.allocate_edits.list_valued`); device
  nodes and mounts add up.
- **Where edits come from** (:func:`toolkit_cdi_id`; :mod:`translate.edit_sources`): for NVIDIA
  the container toolkit's own device ``nvidia.com/gpu=<UUID>`` (a time-slicing replica
  ``GPU-x::n`` is GPU ``GPU-x``), used as is (no spec of ours); otherwise the device plugin's
  Allocate answer recorded while legacy, else the catalog's static recipe, written into our
  own per-claim spec. The edits used are kept with the prepared device (``edits``, a
  :class:`translate.catalog_edits.DeviceEdits`; the checkpoint serialises it) so a spec lost at
  a reboot is rewritten identically from the checkpoint.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.allocate_edits import list_valued
from dra_bridge.translate.catalog_edits import DeviceEdits
from dra_bridge.translate.cdi_rules import edits_empty, spec_problems
from dra_bridge.translate.edit_escape import escape_refusals, plain_name
from dra_bridge.translate.errors import ClaimError
from dra_bridge.translate.inventory.allocatable import DeviceId, split_replica
from dra_bridge.translate.inventory.drm import DrmNode, is_drm_path, missing_kinds, refresh
from dra_bridge.translate.names import BRIDGE_DRIVER, NVIDIA_RESOURCE_PREFIX, NVIDIA_TOOLKIT_CDI_KIND

CDI_VERSION = "0.5.0"
CDI_VENDOR = BRIDGE_DRIVER
CDI_CLASS = "claim"
CDI_KIND = f"{CDI_VENDOR}/{CDI_CLASS}"
SPEC_PREFIX = f"{CDI_VENDOR}-{CDI_CLASS}_"
SPEC_SUFFIX = ".json"
TOOLKIT_KIND = NVIDIA_TOOLKIT_CDI_KIND
"""The NVIDIA container toolkit's kind (``nvidia-ctk cdi generate``, NVIDIA/nvidia-container-toolkit)."""

EditsLookup = Callable[[str, str], "DeviceEdits | None"]
"""(legacy resource name, kubelet device ID) -> the device's edits, or None."""

_UID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_CDI_NAME_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?")


@dataclass(frozen=True)
class Result:
    """One allocation result of ours: ``request`` (subrequest stripped), ``pool``, ``device``,
    and whether it has ``adminAccess`` (``admin``)."""

    request: str
    pool: str
    device: str
    admin: bool = False


@dataclass(frozen=True)
class PreparedDevice:
    """One device of a NodePrepareResources answer (the kubelet's ``Device`` message) plus the
    device it stands for (``device``) and the edits our spec gives it (``edits``, None for a
    toolkit device; kept in the checkpoint so a spec can be rewritten without the claim,
    identically). ``admin``: the allocation result has ``adminAccess`` (the device may be
    shared with other claims, docs/design.md D34)."""

    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...]
    device: DeviceId = field(default_factory=lambda: DeviceId("", ""))
    edits: DeviceEdits | None = None
    admin: bool = False


@dataclass
class ClaimAnswer:
    """What Prepare returns for one claim, and our CDI spec for it (None when none is needed)."""

    devices: list[PreparedDevice] = field(default_factory=list)
    spec: dict[str, Any] | None = None


def request_name(request: str) -> str:
    """``main/sub`` -> ``main``, as the Go helper's ``stripSubrequestNames`` does.

    https://github.com/kubernetes/dynamic-resource-allocation/blob/master/kubeletplugin/draplugin.go
    """
    return request.split("/", 1)[0]


def check_uid(uid: str) -> None:
    """Raise ClaimError when a claim UID is not a plain name (it would become part of a path:
    :func:`translate.edit_escape.plain_name`)."""
    if not plain_name(uid):
        raise ClaimError(f"claim UID {uid!r} is not a plain name: it never becomes part of a file name")


def spec_file_name(uid: str) -> str:
    """Our spec file for a claim: ``dra-bridge.io-claim_<uid>.json``. Raises ClaimError when
    ``uid`` is not a plain name (:func:`check_uid`)."""
    check_uid(uid)
    return f"{SPEC_PREFIX}{uid}{SPEC_SUFFIX}"


def spec_file_uid(name: str) -> str | None:
    """The claim UID of one of our spec files, or None for any other file (the toolkit's, ...)."""
    if name.startswith(SPEC_PREFIX) and name.endswith(SPEC_SUFFIX):
        uid = name[len(SPEC_PREFIX) : -len(SPEC_SUFFIX)]
        return uid if _UID_RE.fullmatch(uid) else None
    return None


def device_cdi_id(uid: str, device_name: str) -> str:
    """``dra-bridge.io/claim=<uid>-<device name>``."""
    return f"{CDI_KIND}={uid}-{device_name}"


def toolkit_cdi_id(resource_name: str, device_id: str) -> str | None:
    """The container toolkit's CDI device for an NVIDIA device (``nvidia.com/gpu=<UUID>``; a
    replica ``GPU-x::n`` is ``GPU-x``, a MIG device its ``MIG-`` UUID); None for other vendors."""
    if not resource_name.startswith(NVIDIA_RESOURCE_PREFIX):
        return None
    return f"{TOOLKIT_KIND}={split_replica(device_id)[0]}"


def claim_label(namespace: str, name: str, uid: str) -> str:
    """``claim <namespace>/<name> (<uid>)``: how errors name a claim."""
    return f"claim {namespace}/{name} ({uid})"


def our_results(claim: Mapping[str, Any], namespace: str, name: str, uid: str, driver: str, pool: str) -> list[Result]:
    """The claim's allocation results for ``driver`` on ``pool``, in allocation order.

    Raises ClaimError (naming the claim and the rule) when the claim's UID is not ``uid`` (it
    was deleted and re-created: the Go helper's ``getResourceClaims`` checks the same), it is not
    allocated, a result is malformed, it has no result of ours, or one of ours is in another pool
    (another node's devices)."""
    label = claim_label(namespace, name, uid)
    meta = claim.get("metadata")
    if not isinstance(meta, Mapping) or meta.get("uid") != uid:
        got = meta.get("uid") if isinstance(meta, Mapping) else None
        raise ClaimError(f"{label}: the API server's claim has UID {got!r}: it was replaced, not preparing it")
    status = claim.get("status")
    allocation = status.get("allocation") if isinstance(status, Mapping) else None
    devices = allocation.get("devices") if isinstance(allocation, Mapping) else None
    results = devices.get("results") if isinstance(devices, Mapping) else None
    if not isinstance(allocation, Mapping):
        raise ClaimError(f"{label}: status.allocation is not set: the claim is not allocated")
    if not isinstance(results, list):
        raise ClaimError(f"{label}: status.allocation.devices.results is not a list")
    out: list[Result] = []
    for i, r in enumerate(results):
        if not isinstance(r, Mapping) or not all(
            isinstance(r.get(k), str) and r.get(k) for k in ("request", "driver", "pool", "device")
        ):
            raise ClaimError(
                f"{label}: status.allocation.devices.results[{i}] lacks a request, driver, pool or device string"
            )
        if r["driver"] != driver:
            continue
        if r["pool"] != pool:
            raise ClaimError(
                f"{label}: results[{i}] is device {r['device']} of pool {r['pool']}, not of this node's pool {pool}"
            )
        out.append(Result(request_name(r["request"]), r["pool"], r["device"], r.get("adminAccess") is True))
    if not out:
        raise ClaimError(f"{label}: no allocation result has driver {driver}: nothing of it is ours to prepare")
    return out


def composition_refusals(edits: Mapping[str, Any]) -> list[str]:
    """Why one device's CDI container edits would not compose with other devices' (empty: they
    do): an ``env`` entry that sets a list-valued variable (:data:`translate.allocate_edits.LIST_VARIABLES`, any
    ``*_VISIBLE_DEVICES``, or a value holding a comma). Device nodes, mounts and hooks add up."""
    refusals = []
    for entry in edits.get("env") or []:
        key, _, value = str(entry).partition("=")
        if list_valued(key, value):
            refusals.append(f"per-device env {key}={value} is list-valued: the last device's value would win")
    return refusals


def render_spec(
    uid: str, devices: Sequence[tuple[str, Mapping[str, Any]]], spec_edits: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """Our CDI spec for one claim: ``devices`` as (device name, per-device edits), named
    ``<uid>-<device name>``; ``spec_edits`` merged (device nodes by path, once each) into the
    spec-level ``containerEdits`` (a device whose own edits are empty gets them as its own: CDI
    refuses a device with empty edits). Raises ClaimError when a device's edits do not compose or would
    let the container escape (:func:`translate.edit_escape.escape_refusals`, the last line before
    a spec is written), a name is not a CDI device name, or the spec breaks the CDI rules
    (:func:`translate.cdi_rules.spec_problems`)."""
    check_uid(uid)
    nodes: dict[str, dict[str, Any]] = {}
    for edits in spec_edits:
        escapes = escape_refusals(edits)
        if escapes:
            raise ClaimError("spec-level edits refused: " + "; ".join(escapes))
        for node in edits.get("deviceNodes") or []:
            nodes.setdefault(str(node["path"]), dict(node))
    out_devices = []
    for name, edits in devices:
        cdi_name = f"{uid}-{name}"
        if not _CDI_NAME_RE.fullmatch(cdi_name):
            raise ClaimError(
                f"CDI device name {cdi_name!r} breaks the CDI name rule (alphanumeric ends, inner [A-Za-z0-9_.:-])"
            )
        refusals = composition_refusals(edits) + escape_refusals(edits)
        if refusals:
            raise ClaimError(f"device {name}: " + "; ".join(refusals))
        out_devices.append({"name": cdi_name, "containerEdits": dict(edits)})
    shared = [nodes[p] for p in sorted(nodes)]
    for device in out_devices:  # a device with empty edits makes the whole spec invalid
        if edits_empty(device["containerEdits"]):
            device["containerEdits"] = {"deviceNodes": [dict(n) for n in shared]}
    spec: dict[str, Any] = {"cdiVersion": CDI_VERSION, "kind": CDI_KIND, "devices": out_devices}
    if shared:
        spec["containerEdits"] = {"deviceNodes": shared}
    problems = spec_problems(spec)
    if problems:
        raise ClaimError("the CDI spec would break the CDI rules: " + "; ".join(problems))
    return spec


def _kept_edits(d: PreparedDevice, fallback: EditsLookup | None) -> DeviceEdits | None:
    if d.edits is not None:
        return d.edits
    return fallback(d.device.resource, d.device.device_id) if fallback is not None else None


def _current(edits: DeviceEdits, drm: Sequence[DrmNode] | None, name: str) -> Mapping[str, Any]:
    """A device's kept edits with its DRM nodes derived again from its PCI address (never a
    host path from before a reboot). Raises ClaimError when sysfs shows none for it now."""
    device: dict[str, Any] = dict(edits.device)
    if drm is None or not edits.identity:
        return device
    listed = device.get("deviceNodes")
    kinds = sorted(
        {
            "render" if "render" in str(n.get("hostPath") or n.get("path")) else "card"
            for n in (listed if isinstance(listed, list) else [])
            if is_drm_path(str(n.get("hostPath") or n.get("path", "")))
        }
    )
    missing = missing_kinds(edits.identity, drm, kinds)
    if missing:
        raise ClaimError(
            f"device {name}: sysfs shows no DRM {' or '.join(missing)} node for its PCI address {edits.identity}"
        )
    return refresh(device, edits.identity, drm)


def own_spec(
    uid: str,
    devices: Sequence[PreparedDevice],
    fallback: EditsLookup | None = None,
    drm: Sequence[DrmNode] | None = None,
) -> dict[str, Any] | None:
    """Our CDI spec for a prepared claim's devices that carry one of our CDI IDs (from the edits
    each device keeps; ``fallback`` looks them up for a device checkpointed before edits were
    kept), or None when none does. DRM nodes are derived again from each device's PCI address in
    ``drm`` (the host's DRM nodes now; None: as kept). Deterministic: rewriting a spec lost at a
    reboot gives the same file for the same hardware. Raises ClaimError as :func:`render_spec`,
    when a device's edits are unknown, or when its PCI address has no DRM node now."""
    own: list[tuple[str, Mapping[str, Any]]] = []
    spec_edits: list[Mapping[str, Any]] = []
    for d in devices:
        if device_cdi_id(uid, d.device_name) not in d.cdi_device_ids:
            continue
        edits = _kept_edits(d, fallback)
        if edits is None:
            raise ClaimError(f"device {d.device_name} ({d.device.resource}) has no recorded edits and no static recipe")
        spec_edits.append(edits.spec)
        own.append((d.device_name, _current(edits, drm, d.device_name)))
    return render_spec(uid, own, spec_edits) if own else None


def answer(
    uid: str,
    results: Sequence[Result],
    inventory: Mapping[str, DeviceId],
    resolves: Mapping[str, bool],
    label: str,
    edits: EditsLookup,
) -> ClaimAnswer:
    """The answer for a claim's results.

    ``inventory`` maps our device names to the devices they stand for;
    ``resolves`` says, per toolkit CDI ID, whether it resolves in the node's CDI specs; ``edits``
    finds a device's recorded Allocate edits or static recipe (:mod:`translate.edit_sources`).
    Each NVIDIA device gets its toolkit device; others their edits, in our spec. Raises
    ClaimError (naming ``label``, the device and the rule) for a device we do not publish, an
    NVIDIA device whose toolkit device does not resolve, or a device with no edit source."""
    out = ClaimAnswer()
    for r in results:
        known = inventory.get(r.device)
        if known is None:
            raise ClaimError(f"{label}: device {r.device} is not in this node's recorded inventory")
        resource, device_id = known.resource, known.device_id
        toolkit = toolkit_cdi_id(resource, device_id)
        kept: DeviceEdits | None = None
        if toolkit is not None:
            if not resolves.get(toolkit):
                raise ClaimError(
                    f"{label}: device {r.device} needs the container toolkit's CDI device {toolkit}, "
                    "which no spec in the node's CDI directories (dra-bridge --cdi-dir) defines "
                    "(run nvidia-ctk cdi generate, or the GPU Operator's toolkit with CDI on)"
                )
            ids: tuple[str, ...] = (toolkit,)
        else:
            found = edits(resource, device_id)
            if found is None:
                raise ClaimError(
                    f"{label}: device {r.device} ({resource} {device_id}) has no CDI source: no toolkit "
                    "device, no recorded Allocate answer that composes, no static recipe in the catalog"
                )
            ids, kept = (device_cdi_id(uid, r.device),), found
        out.devices.append(PreparedDevice((r.request,), r.pool, r.device, ids, known, kept, r.admin))
    try:
        out.spec = own_spec(uid, out.devices)
    except ClaimError as exc:
        raise ClaimError(f"{label}: {exc}") from None
    return out
