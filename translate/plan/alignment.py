"""Topology alignment: the NUMA / PCIe alignment the kubelet's Topology Manager gave a pod, as
claim constraints (issue 14).

With the Topology Manager's ``single-numa-node`` or ``restricted`` policy, a container's devices
(``scope: container``) or the pod's (``scope: pod``) come from one NUMA node. A converted pod
keeps that by a ``matchAttribute`` constraint (``spec.devices.constraints[]``, resource.k8s.io/v1 types)
over the requests that together make one container's devices (or the pod's), never more:

    Alignment(policy="none")   no constraint (the default: today's output)
    Alignment(policy="numa")   matchAttribute: resource.kubernetes.io/numaNode
    Alignment(policy="pcie")   matchAttribute: resource.kubernetes.io/pcieRoot

A device that lacks the attribute fails the constraint, so a constraint is written only where
every driver a request's DeviceClass selects publishes the attribute for that device type
(:data:`VENDOR_PUBLISHES`, :func:`bridge_publishes`); elsewhere :func:`unalignable` gives a
``partial`` finding and the plan writes no constraint over that request. Source of the
vendor table: NVIDIA (https://github.com/NVIDIA/k8s-dra-driver-gpu/blob/main/cmd/gpu-kubelet-plugin/deviceinfo.go:
``pcieRoot`` on GPUs and on MIG devices, the parent's; ``numaNode`` on GPUs only in recent versions, never on
MIG devices), AMD (https://github.com/ROCm/k8s-gpu-dra-driver: ``pcieRoot``), Intel
(https://github.com/intel/intel-resource-drivers-for-kubernetes: ``pcieRoot`` from v0.10).

Claims hold at most 32 devices and 32 requests (resource.k8s.io/v1), and a constraint covers
requests of one claim only: :func:`pack_claims` keeps the requests of a constraint together.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from dra_bridge.translate.catalog import ResourceMapping, Target
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.inventory.api_rules import MAX_DEVICES_PER_CLAIM, MAX_REQUESTS_PER_CLAIM
from dra_bridge.translate.names import AMD_DRIVER, INTEL_DRIVER, NVIDIA_DRIVER, STANDARD_DOMAIN

AlignmentPolicy = Literal["none", "numa", "pcie"]
AlignmentScope = Literal["container", "pod"]
POLICIES: tuple[AlignmentPolicy, ...] = ("none", "numa", "pcie")
SCOPES: tuple[AlignmentScope, ...] = ("container", "pod")
#: :attr:`Finding.code` of the ``partial`` findings for an alignment the plan could not write.
NOT_WRITTEN = "alignment-not-written"
#: The standard attribute each policy matches (without its domain).
ATTRIBUTES: dict[str, str] = {"numa": "numaNode", "pcie": "pcieRoot"}

#: (vendor driver, device type) -> {standard attribute: caveat ("" when none)} it publishes
#: (the vendor table above). A MIG device carries its parent GPU's PCIe root.
VENDOR_PUBLISHES: dict[tuple[str, str], dict[str, str]] = {
    (NVIDIA_DRIVER, "gpu"): {
        "pcieRoot": "",
        "numaNode": "the NVIDIA DRA driver publishes numaNode for GPUs "
        "only in recent versions: nodes with an older one offer "
        "no device to this request",
    },
    (NVIDIA_DRIVER, "mig"): {"pcieRoot": ""},
    (AMD_DRIVER, "gpu"): {"pcieRoot": ""},
    (INTEL_DRIVER, "gpu"): {"pcieRoot": ""},
}


@dataclass(frozen=True)
class Alignment:
    """How to align a pod's devices: ``policy`` none|numa|pcie and ``scope`` container|pod,
    as the Topology Manager's scope."""

    policy: AlignmentPolicy = "none"
    scope: AlignmentScope = "container"

    @property
    def attribute(self) -> str:
        """The fully qualified attribute matched (``resource.kubernetes.io/numaNode``); "" for none."""
        return f"{STANDARD_DOMAIN}/{ATTRIBUTES[self.policy]}" if self.policy != "none" else ""


def device_type(mapping: ResourceMapping) -> str:
    """``mig`` for MIG devices (a MIG resource, a shared MIG resource, or a MIG single-strategy
    ``nvidia.com/gpu``), else ``gpu``."""
    return "mig" if mapping.kind == "mig" or mapping.profile is not None else "gpu"


def bridge_publishes(mapping: ResourceMapping) -> dict[str, str]:
    """The standard attributes the bridge publishes for the devices of ``mapping``: numaNode for
    every device on one NUMA node (the kubelet's topology or sysfs), pcieRoot where NVML gives
    the bus ID (NVIDIA devices; a MIG device gets its parent's)."""
    out = {"numaNode": ""}
    if mapping.gfd == "nvidia":
        out["pcieRoot"] = "the bridge publishes pcieRoot only where NVML gives the bus ID"
    return out


def missing(mapping: ResourceMapping, target: Target, alignment: Alignment) -> tuple[str | None, str]:
    """Who lacks the attribute: (the driver that does not publish it for this device type, or
    None when every driver the request's class selects does; the caveats of those that do)."""
    name = ATTRIBUTES[alignment.policy]
    kind = device_type(mapping)
    drivers: list[tuple[str, Mapping[str, str]]] = []
    if target == "bridge":
        drivers.append(("the bridge", bridge_publishes(mapping)))
    if mapping.vendor is not None:
        drivers.append((mapping.vendor.driver, VENDOR_PUBLISHES.get((mapping.vendor.driver, kind), {})))
    notes = []
    for driver, published in drivers:
        if name not in published:
            return f"{driver} does not publish {STANDARD_DOMAIN}/{name} for {kind.upper()} devices", ""
        if published[name]:
            notes.append(published[name])
    return None, "; ".join(notes)


K = TypeVar("K", bound=Hashable)


def devices_per_constraint(counts: Iterable[tuple[K, int]], scope: AlignmentScope) -> dict[K | str, int]:
    """Devices one constraint would cover: ``counts`` is (container key, devices) per demand;
    the sum per container key (scope container) or ``{"": total}`` (scope pod). A constraint is
    needed where the sum is over 1."""
    totals: dict[K | str, int] = {}
    for key, count in counts:
        group: K | str = "" if scope == "pod" else key
        totals[group] = totals.get(group, 0) + count
    return totals


def not_written(findings: Iterable[Finding]) -> list[Finding]:
    """The findings (in order) of alignments the plan could not write (:data:`NOT_WRITTEN`)."""
    return [f for f in findings if f.code == NOT_WRITTEN]


def unalignable(
    demands: Sequence[tuple[ResourceMapping, int, str, str, str]], target: Target, alignment: Alignment, pod_path: str
) -> list[Finding]:
    """``partial`` findings for the devices alignment cannot cover.

    ``demands``: (mapping, count, container, path, legacy value) per container and resource.
    A container (or, with pod scope, the pod) with more than one device needs the attribute on
    all of them; a resource whose drivers do not all publish it gets a finding and no constraint.
    """
    if alignment.policy == "none":
        return []
    totals = devices_per_constraint(((container, count) for _, count, container, _, _ in demands), alignment.scope)
    out = []
    for mapping, _, container, path, legacy in demands:
        if totals["" if alignment.scope == "pod" else container] <= 1:
            continue
        why, _ = missing(mapping, target, alignment)
        if why is not None:
            hint = (
                "; alignment pcie is published for them"
                if alignment.policy == "numa" and missing(mapping, target, Alignment("pcie"))[0] is None
                else ""
            )
            out.append(
                Finding(
                    path or f"{pod_path}spec",
                    legacy,
                    "partial",
                    f"{alignment.policy} alignment not written: {why}{hint}",
                    code=NOT_WRITTEN,
                )
            )
    return out


def groups(
    users: Sequence[tuple[str, ...]], counts: Sequence[int], alignable: Sequence[bool], alignment: Alignment
) -> list[tuple[str, tuple[int, ...]]]:
    """(container, request indices) each constraint covers ("" for the pod with pod scope): the
    requests a container (or the pod) references, when they hold more than one device and all
    can be aligned. A duplicate (an init container reusing exactly an app container's
    requests) appears once, under the first container."""
    if alignment.policy == "none":
        return []
    if alignment.scope == "pod":
        candidates = [("", tuple(range(len(counts))))]
    else:
        names = list(dict.fromkeys(n for u in users for n in u))
        candidates = [(n, tuple(i for i, u in enumerate(users) if n in u)) for n in names]
    out: list[tuple[str, tuple[int, ...]]] = []
    for who, group in candidates:
        if sum(counts[i] for i in group) > 1 and all(alignable[i] for i in group) and all(g != group for _, g in out):
            out.append((who, group))
    return out


def outcome(
    together: Sequence[tuple[str, tuple[int, ...]]],
    lost: set[int],
    notes: Sequence[str],
    where: Mapping[str, tuple[str, str]],
    alignment: Alignment,
) -> list[Finding]:
    """A finding per constraint: ``translated`` with the drivers' caveats (``notes`` per request)
    when written, ``partial`` when its requests did not fit in one claim. ``where``: container
    name ("" for the pod) -> (finding path, legacy value)."""
    out = []
    for g, (who, group) in enumerate(together):
        path, legacy = where[who]
        devices = f"container {who}'s devices" if who else "the pod's devices"
        if g in lost:
            out.append(
                Finding(
                    path,
                    legacy,
                    "partial",
                    f"{alignment.policy} alignment not written: {devices} "
                    f"need more than one claim (32 devices, 32 requests)",
                    code=NOT_WRITTEN,
                )
            )
            continue
        caveats = "; ".join(dict.fromkeys(n for i in group if (n := notes[i])))
        out.append(
            Finding(
                path,
                legacy,
                "translated",
                f"aligned: {devices} share {alignment.attribute}" + (f" ({caveats})" if caveats else ""),
            )
        )
    return out


def pack_claims(
    counts: Sequence[int], together: Sequence[tuple[str, tuple[int, ...]]]
) -> tuple[list[list[int]], set[int]]:
    """Requests (by index, in order) into claims of at most 32 devices and 32 requests, each
    group of ``together`` (overlapping groups merged) in one claim where it fits; returns the
    claims and the indices of the groups that did not fit (their constraints are not written).
    Without groups: the requests in order, a new claim whenever the next would break a limit."""
    unit_of = list(range(len(counts)))

    def find(i: int) -> int:
        while unit_of[i] != i:
            i = unit_of[i]
        return i

    for _, group in together:
        for i in group[1:]:
            unit_of[find(i)] = find(group[0])
    units: dict[int, list[int]] = {}
    for i in range(len(counts)):
        units.setdefault(find(i), []).append(i)
    claims: list[list[int]] = [[]]
    split: set[int] = set()
    for members in units.values():
        size = sum(counts[i] for i in members)
        current = claims[-1]
        if len(members) > 1 and (size > MAX_DEVICES_PER_CLAIM or len(members) > MAX_REQUESTS_PER_CLAIM):
            split.update(members)
        elif current and (
            sum(counts[i] for i in current) + size > MAX_DEVICES_PER_CLAIM
            or len(current) + len(members) > MAX_REQUESTS_PER_CLAIM
        ):
            claims.append([])
        for i in members:
            current = claims[-1]
            if current and (
                sum(counts[j] for j in current) + counts[i] > MAX_DEVICES_PER_CLAIM
                or len(current) >= MAX_REQUESTS_PER_CLAIM
            ):
                claims.append([])
            claims[-1].append(i)
    lost = {g for g, (_, group) in enumerate(together) if split.intersection(group)}
    return claims, lost


def claim_constraints(
    claim: Sequence[int], together: Sequence[tuple[str, tuple[int, ...]]], names: Sequence[str], attribute: str
) -> list[dict[str, Any]]:
    """The constraints (internal form: ``{"requests": [name, ...], "matchAttribute": attr}``) of
    the groups lying wholly in ``claim``, in group order."""
    inside = set(claim)
    return [
        {"requests": [names[i] for i in group], "matchAttribute": attribute}
        for _, group in together
        if inside.issuperset(group)
    ]
