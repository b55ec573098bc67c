"""Simulate the scheduler's allocation for a set of documents: which claims get which devices on which node.

Pure (no I/O). Input: Kubernetes objects as dicts (Node, DeviceClass, ResourceSlice,
ResourceClaim, ResourceClaimTemplate, Pod and pod-template workloads; other kinds are
ignored), resource.k8s.io v1, v1beta2 or v1beta1. Rules (issue 12; the scheduler's DRA plugin):

- a Pod's claims (``spec.resourceClaims``: ``resourceClaimName``, or a
  ``resourceClaimTemplateName`` whose template becomes a claim named ``<pod>-<entry>``) are
  allocated together, in the pod's order; a workload (Deployment, ReplicaSet, StatefulSet:
  ``replicas``, default 1; Job: ``parallelism``, default 1; CronJob: 1) counts as that many
  pods ``<name>-<i>``; claims no pod references are allocated one by one in input order;
- claims with ``status.allocation`` hold their devices and are not allocated again (a pod
  whose allocated claim's node selector excludes the node does not fit there);
- ``node``: that Node only; otherwise every Node in input order, and the first on which
  every claim is allocated wins (when none does, the node where most are allocated);
- each set of claims is allocated by :class:`translate.alloc.engine.NodeAllocator`; an
  :class:`~translate.errors.AllocationError` makes each claim of the set an ``error`` with
  upstream's message.

:func:`simulate` returns a :class:`Simulation`. Malformed input raises
:class:`translate.errors.InputError` naming the object, the field and the rule.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from dra_bridge.translate.alloc.engine import NodeAllocator
from dra_bridge.translate.alloc.features import Features
from dra_bridge.translate.alloc.node_match import Node, selector_matches
from dra_bridge.translate.alloc.pools import gather_pools
from dra_bridge.translate.alloc.selectors import SelectorCache
from dra_bridge.translate.alloc.shapes import claim_spec, class_spec, object_label, slice_spec
from dra_bridge.translate.alloc.state import AllocatedState
from dra_bridge.translate.errors import AllocationError, InputError

__all__ = ["ClaimOutcome", "Simulation", "simulate"]

_WORKLOADS: Final = {
    "Deployment": "replicas",
    "ReplicaSet": "replicas",
    "StatefulSet": "replicas",
    "Job": "parallelism",
    "CronJob": "",
}


@dataclass
class ClaimOutcome:
    """One claim's outcome: ``allocated``, ``unsatisfiable`` or ``error``."""

    name: str
    namespace: str
    outcome: str
    reason: str
    allocation: dict[str, Any] | None
    claim: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "outcome": self.outcome,
            "reason": self.reason,
            "allocation": self.allocation,
        }


@dataclass
class Simulation:
    """The node chosen and every claim's outcome, in input order."""

    node: str
    claims: list[ClaimOutcome] = field(default_factory=list)

    @property
    def all_allocated(self) -> bool:
        return all(c.outcome == "allocated" for c in self.claims)


@dataclass
class _Claim:
    key: tuple[str, str]
    obj: dict[str, Any]
    spec: dict[str, Any]
    allocation: dict[str, Any] | None


def _meta(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{obj.get('kind')} (no name): metadata.name: must be a non-empty string")
    return str(meta.get("namespace") or "default"), name


def _pod_specs(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    kind = str(obj.get("kind"))
    _, name = _meta(obj)
    if kind == "Pod":
        return [(name, obj.get("spec") or {})]
    spec = obj.get("spec") or {}
    if kind == "CronJob":
        template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
        return [(f"{name}-0", template.get("spec") or {})]
    count = spec.get(_WORKLOADS[kind])
    count = 1 if count is None else count
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InputError(f"{object_label(obj)}: spec.{_WORKLOADS[kind]}: must be a non-negative integer")
    template = (spec.get("template") or {}).get("spec") or {}
    return [(f"{name}-{i}", template) for i in range(count)]


class _Inputs:
    def __init__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        self.nodes: list[Node] = []
        self.classes: dict[str, dict[str, Any]] = {}
        self.slices: list[tuple[str, dict[str, Any]]] = []
        self.claims: dict[tuple[str, str], _Claim] = {}
        self.templates: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.order: list[Any] = []  # claim keys and pod groups, in input order
        pods: list[Mapping[str, Any]] = []
        for obj in objects:
            kind = obj.get("kind")
            if kind == "Node":
                labels = (obj.get("metadata") or {}).get("labels") or {}
                self.nodes.append(Node(_meta(obj)[1], {str(k): str(v) for k, v in labels.items()}))
            elif kind == "DeviceClass":
                self.classes[_meta(obj)[1]] = class_spec(obj)
            elif kind == "ResourceSlice":
                self.slices.append((_meta(obj)[1], slice_spec(obj)))
            elif kind == "ResourceClaimTemplate":
                self.templates[_meta(obj)] = obj
            elif kind == "ResourceClaim":
                key = _meta(obj)
                label = object_label(obj)
                spec = claim_spec(obj, obj.get("spec"), f"{label}: spec")
                allocation = (obj.get("status") or {}).get("allocation")
                self.claims[key] = _Claim(key, dict(obj), spec, allocation)
                self.order.append(key)
            elif kind == "Pod" or kind in _WORKLOADS:
                pods.append(obj)
                self.order.append(len(pods) - 1)
        order = [self._group(pods[item]) if isinstance(item, int) else item for item in self.order]
        referenced = {key for item in order if isinstance(item, list) for group in item for key in group}
        self.order = [item for item in order if isinstance(item, list) or item not in referenced]

    def _group(self, obj: Mapping[str, Any]) -> list[list[tuple[str, str]]]:
        namespace, _ = _meta(obj)
        groups = []
        for pod_name, spec in _pod_specs(obj):
            keys = []
            for i, entry in enumerate(spec.get("resourceClaims") or []):
                where = f"{object_label(obj)}: spec.resourceClaims[{i}]"
                if entry.get("resourceClaimName"):
                    key = (namespace, str(entry["resourceClaimName"]))
                    if key not in self.claims:
                        raise InputError(
                            f"{where}.resourceClaimName: ResourceClaim {key[0]}/{key[1]} is not in the input"
                        )
                elif entry.get("resourceClaimTemplateName"):
                    template = self.templates.get((namespace, str(entry["resourceClaimTemplateName"])))
                    if template is None:
                        raise InputError(
                            f"{where}.resourceClaimTemplateName: ResourceClaimTemplate {namespace}/"
                            f"{entry['resourceClaimTemplateName']} is not in the input (put it before "
                            "the objects that use it, as convert writes it)"
                        )
                    key = (namespace, f"{pod_name}-{entry.get('name')}")
                    label = object_label(template)
                    obj_claim = {
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceClaim",
                        "metadata": {"name": key[1], "namespace": namespace},
                    }
                    spec_v1 = claim_spec(template, (template.get("spec") or {}).get("spec"), f"{label}: spec.spec")
                    self.claims[key] = _Claim(key, obj_claim, spec_v1, None)
                else:
                    raise InputError(f"{where}: one of resourceClaimName or resourceClaimTemplateName must be set")
                keys.append(key)
            groups.append(keys)
        return groups


def _try_node(inputs: _Inputs, node: Node, features: Features, cache: SelectorCache) -> dict[tuple[str, str], Any]:
    state = AllocatedState()
    for claim in inputs.claims.values():
        if claim.allocation:
            state.add_allocation(claim.allocation)
    pools = gather_pools(inputs.slices, node, features.partitionable_devices)
    allocator = NodeAllocator(node, pools, inputs.classes, features, state, cache)
    done: dict[tuple[str, str], Any] = {}
    groups: list[list[tuple[str, str]]] = []
    for item in inputs.order:
        groups += item if isinstance(item, list) else [[item]]
    for group in groups:
        held = [inputs.claims[k] for k in group if inputs.claims[k].allocation or k in done]
        todo = list(dict.fromkeys(k for k in group if not inputs.claims[k].allocation and k not in done))
        if not todo:
            continue
        excluded = [
            c
            for c in held
            if (c.allocation or {}).get("nodeSelector") and not selector_matches(c.allocation["nodeSelector"], node)  # type: ignore[index]
        ]
        try:
            results = (
                None if excluded else allocator.allocate([(f"{k[0]}/{k[1]}", inputs.claims[k].spec) for k in todo])
            )
        except AllocationError as exc:
            for k in todo:
                done[k] = exc
            continue
        for i, k in enumerate(todo):
            done[k] = results[i] if results is not None else None
            if results is not None:
                state.add_allocation(results[i])
    return done


def _outcome(claim: _Claim, result: Any, node: str) -> ClaimOutcome:
    namespace, name = claim.key
    out = copy.deepcopy(claim.obj)
    if claim.allocation:
        return ClaimOutcome(name, namespace, "allocated", "already allocated", claim.allocation, out)
    if isinstance(result, AllocationError):
        return ClaimOutcome(name, namespace, "error", str(result), None, out)
    if result is None:
        return ClaimOutcome(
            name, namespace, "unsatisfiable", f"cannot allocate all claims of its pod on node {node}", None, out
        )
    out.setdefault("status", {})["allocation"] = result
    return ClaimOutcome(name, namespace, "allocated", "", result, out)


def simulate(
    objects: Sequence[Mapping[str, Any]],
    features: Features,
    node: str | None = None,
    cache: SelectorCache | None = None,
) -> Simulation:
    """Allocate every claim of ``objects`` (see the module docstring). Raises InputError."""
    inputs = _Inputs(objects)
    nodes = inputs.nodes
    if node is not None:
        nodes = [n for n in nodes if n.name == node]
        if not nodes:
            raise InputError(
                f"--node {node}: no Node object of that name in the input (its labels decide which slices reach it)"
            )
    if not nodes:
        raise InputError(
            "no Node object in the input: simulate allocates on a node (add `kubectl get node NAME -o yaml`)"
        )
    cache = cache or SelectorCache()
    best: tuple[int, str, dict[tuple[str, str], Any]] | None = None
    for candidate in nodes:
        done = _try_node(inputs, candidate, features, cache)
        allocated = sum(1 for r in done.values() if isinstance(r, dict))
        if best is None or allocated > best[0]:
            best = (allocated, candidate.name, done)
        if all(isinstance(r, dict) for r in done.values()):
            best = (allocated, candidate.name, done)
            break
    assert best is not None
    _, chosen, done = best
    return Simulation(chosen, [_outcome(c, done.get(k), chosen) for k, c in inputs.claims.items()])
