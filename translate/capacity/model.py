"""The capacity check's inputs and outputs: typed, frozen, JSON-ready.

Pure (no I/O). Inputs (built by :mod:`translate.capacity.demand` and
:mod:`translate.capacity.inventory`, or directly):

- :class:`WorkloadDemand`: a workload's ``namespace``, ``name``, ``kind``, ``priority`` (higher
  is placed first) and its pods (:class:`PodDemand`), each with the converted claims it would
  create (``(claim name, v1 claim spec)``, allocated together as the scheduler does for one
  pod), its legacy extended-resource requests (``{resource: devices}``, the pod's effective
  request), and the node constraints of the converted and of the legacy pod
  (:class:`NodeConstraints`);
- :class:`ClusterNode`: a node's name, labels, taints, ``unschedulable`` and its allocatable
  extended resources;
- the devices: ResourceSlices (``(name, v1 spec)``), see :mod:`translate.capacity.inventory`.

Outputs (:mod:`translate.capacity.fit`): :class:`PodFit` per pod, :class:`WorkloadFit` per
workload, :class:`PoolUsage` per node pool, together a :class:`CapacityResult`; ``as_json()``
gives each as plain dicts (keys as the field names, camelCase).

Verdict codes (``code``, ``legacy_code``): ``fits``; ``node-selection`` (no node passes the
pod's nodeName, node selector, required node affinity or taints); ``no-matching-device`` (no
device of any eligible node matches a request's class and selectors); ``not-enough-devices``
(devices match, but no eligible node has enough of them free); ``constraint`` (a node has
enough free matching devices for each request, but not together: a claim constraint or
requests competing for the same devices); ``error`` (the allocator failed, e.g. a CEL runtime
error; the scheduler retries such a pod, it never binds); ``not-converted`` (the pod has no
converted claims but legacy requests: it stays on the device plugin); legacy only:
``not-enough-devices`` means no eligible node has enough of an extended resource left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CapacityResult",
    "ClaimDemand",
    "ClusterNode",
    "Code",
    "NodeConstraints",
    "PodDemand",
    "PodFit",
    "PoolUsage",
    "WorkloadDemand",
    "WorkloadFit",
    "placement_order",
]

Code = Literal[
    "fits", "node-selection", "no-matching-device", "not-enough-devices", "constraint", "error", "not-converted"
]


@dataclass(frozen=True)
class NodeConstraints:
    """What a pod says about nodes: ``node_name`` (``spec.nodeName``), ``node_selector``,
    ``required_terms`` (required node affinity's ``nodeSelectorTerms``; None when unset) and
    ``tolerations``."""

    node_name: str | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[Mapping[str, Any], ...] | None = None
    tolerations: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ClaimDemand:
    """One claim of a pod: its name (``<pod>-<entry>`` for a template's claim, the claim's own
    for ``resourceClaimName``), its v1 spec (:func:`translate.alloc.shapes.claim_spec`), and
    ``shared``: a named claim that pods share (allocated once, by the first pod placed)."""

    name: str
    spec: Mapping[str, Any]
    shared: bool = False


@dataclass(frozen=True)
class PodDemand:
    """One pod: converted ``claims`` (in the pod's order), ``legacy_requests`` (``{resource:
    devices}``), and the node constraints of the ``converted`` and of the ``legacy`` pod."""

    name: str
    claims: tuple[ClaimDemand, ...]
    legacy_requests: Mapping[str, int]
    converted: NodeConstraints = field(default_factory=NodeConstraints)
    legacy: NodeConstraints = field(default_factory=NodeConstraints)


@dataclass(frozen=True)
class WorkloadDemand:
    """A workload (or a bare pod) and its pods; placed in the order of :func:`placement_order`."""

    namespace: str
    name: str
    kind: str
    pods: tuple[PodDemand, ...]
    priority: int = 0


def placement_order(workloads: list[WorkloadDemand]) -> list[WorkloadDemand]:
    """Priority (highest first), then namespace, then name, then kind (byte order)."""
    return sorted(workloads, key=lambda w: (-w.priority, w.namespace.encode(), w.name.encode(), w.kind.encode()))


@dataclass(frozen=True)
class Held:
    """What the cluster's running pods hold before the check: ``allocations``
    (``status.allocation`` of claims already allocated) for DRA, ``legacy``
    (``{node: {resource: devices}}``) for the legacy model."""

    allocations: Sequence[Mapping[str, Any]] = ()
    legacy: Mapping[str, Mapping[str, int]] | None = None


@dataclass(frozen=True)
class ClusterNode:
    """A node: ``name``, ``labels``, ``taints`` (``spec.taints``), ``unschedulable``, and
    ``allocatable`` extended resources (``{resource: devices}`` from ``status.allocatable``)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    unschedulable: bool = False
    allocatable: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PodFit:
    """One pod's verdict under DRA (``fits``, ``node``, ``code``, ``reason``, ``devices``:
    ``driver/pool/device`` of every result) and under the legacy model (``legacy_*``).
    ``fits`` is None for a pod that is not converted."""

    namespace: str
    workload: str
    name: str
    fits: bool | None
    node: str | None
    code: Code
    reason: str
    devices: tuple[str, ...]
    legacy_fits: bool
    legacy_node: str | None
    legacy_code: Code
    legacy_reason: str

    @property
    def differs(self) -> bool:
        """Whether DRA places the pod differently: fits where legacy does not (or the other way
        round), or on another node."""
        return self.fits is not None and (self.fits != self.legacy_fits or self.node != self.legacy_node)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "fits": self.fits,
            "node": self.node,
            "code": self.code,
            "reason": self.reason,
            "devices": list(self.devices),
            "legacyFits": self.legacy_fits,
            "legacyNode": self.legacy_node,
            "legacyCode": self.legacy_code,
            "legacyReason": self.legacy_reason,
            "differs": self.differs,
        }


@dataclass(frozen=True)
class WorkloadFit:
    """A workload's pods' verdicts, in order; ``fits``: every converted pod fits."""

    namespace: str
    name: str
    kind: str
    priority: int
    pods: tuple[PodFit, ...]

    @property
    def fits(self) -> bool | None:
        verdicts = [p.fits for p in self.pods if p.fits is not None]
        return all(verdicts) if verdicts else None

    @property
    def legacy_fits(self) -> bool:
        return all(p.legacy_fits for p in self.pods)

    @property
    def differs(self) -> bool:
        return any(p.differs for p in self.pods)

    def as_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "kind": self.kind,
            "priority": self.priority,
            "fits": self.fits,
            "legacyFits": self.legacy_fits,
            "differs": self.differs,
            "pods": [p.as_json() for p in self.pods],
        }


@dataclass(frozen=True)
class PoolUsage:
    """One node pool (the nodes sharing a value of the pool label; ``""`` for nodes without it):
    DRA ``devices`` on its nodes (node-local devices of their slices) and how many are allocated
    before (already allocated claims) and after placing the workloads; legacy ``allocatable``
    extended resources and how many are held before (running pods) and after."""

    pool: str
    nodes: int
    devices: int
    used_before: int
    used_after: int
    legacy_allocatable: Mapping[str, int]
    legacy_used_before: Mapping[str, int]
    legacy_used_after: Mapping[str, int]

    def as_json(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "nodes": self.nodes,
            "devices": self.devices,
            "usedBefore": self.used_before,
            "usedAfter": self.used_after,
            "legacyAllocatable": dict(self.legacy_allocatable),
            "legacyUsedBefore": dict(self.legacy_used_before),
            "legacyUsedAfter": dict(self.legacy_used_after),
        }


@dataclass(frozen=True)
class CapacityResult:
    """Every workload in placement order, and the node pools by the pool label's value."""

    pool_label: str
    workloads: tuple[WorkloadFit, ...]
    pools: tuple[PoolUsage, ...]

    def as_json(self) -> dict[str, Any]:
        pods = [p for w in self.workloads for p in w.pods]
        return {
            "poolLabel": self.pool_label,
            "workloads": [w.as_json() for w in self.workloads],
            "pools": [p.as_json() for p in self.pools],
            "totals": {
                "pods": len(pods),
                "fit": sum(1 for p in pods if p.fits),
                "unschedulable": sum(1 for p in pods if p.fits is False),
                "notConverted": sum(1 for p in pods if p.fits is None),
                "legacyFit": sum(1 for p in pods if p.legacy_fits),
                "differ": sum(1 for p in pods if p.differs),
            },
        }
