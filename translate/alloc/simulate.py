"""Simulate the scheduler's allocation for a set of documents: which claims get which devices on which node.

Pure (no I/O). Input: Kubernetes objects as dicts (Node, DeviceClass, ResourceSlice,
ResourceClaim, ResourceClaimTemplate, Pod and pod-template workloads; other kinds are
ignored), resource.k8s.io v1, v1beta2 or v1beta1. Rules (issues 12 and 19; the scheduler's DRA
plugin):

- an object given twice (same kind, namespace and name) is a warning, and the last one counts
  (as applying both leaves it), except ResourceSlices: the allocator takes every slice it is
  given (upstream's test table repeats slice names across drivers);
- a Pod's claims (``spec.resourceClaims``: ``resourceClaimName``, or a
  ``resourceClaimTemplateName`` whose template becomes a claim named ``<pod>-<entry>``) are
  allocated together, in the pod's order; a workload (Deployment, ReplicaSet, StatefulSet:
  ``replicas``, default 1; Job: ``parallelism``, default 1; CronJob: 1) counts as that many
  pods ``<name>-<i>``; a pod or workload with only ``generateName`` is named as the report
  names it (:func:`translate.names.pod_name`; ``#2``, ``#3``... after a second of one prefix);
  claims no pod references are allocated one by one in input order;
- claims with ``status.allocation`` hold their devices and are not allocated again (a pod
  whose allocated claim's node selector excludes a node does not go there);
- each pod (and each claim no pod references) goes to the first Node, in input order, where
  its claims still to allocate fit together, cumulatively
  (:class:`translate.alloc.placement.FirstFit`): the node is chosen per pod; ``node``: that
  Node only;
- a pod no node fits is ``unsatisfiable``, with the reason ``explain`` gives (``dra-migrate
  simulate`` passes the capacity check's diagnosis: which request, selector or constraint
  failed); an :class:`~translate.errors.AllocationError` that is not about one node makes each
  claim still to allocate an ``error`` with upstream's message, and so does the per-node error
  (invalid pools) when only one node is tried, as the allocator library answers.

:func:`simulate` returns a :class:`Simulation`. Malformed input raises
:class:`translate.errors.InputError` naming the object, the field and the rule.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from dra_bridge.translate.alloc.features import Features
from dra_bridge.translate.alloc.node_match import Node, selector_matches
from dra_bridge.translate.alloc.placement import PER_NODE_ERROR, FirstFit, PlacementError
from dra_bridge.translate.alloc.selectors import SelectorCache
from dra_bridge.translate.alloc.shapes import claim_spec, class_spec, object_label, slice_spec
from dra_bridge.translate.errors import InputError
from dra_bridge.translate.names import pod_name

__all__ = ["ClaimOutcome", "Explain", "PodOutcome", "Simulation", "simulate"]

_WORKLOADS: Final = {
    "Deployment": "replicas",
    "ReplicaSet": "replicas",
    "StatefulSet": "replicas",
    "Job": "parallelism",
    "CronJob": "",
}
_CLUSTER_SCOPED: Final = ("Node", "DeviceClass", "ResourceSlice")

Explain = Callable[[str, Sequence[tuple[str, Mapping[str, Any]]], FirstFit, Sequence[int]], str]
"""Why claims fit on no node: (namespace, claims as ``(name, v1 spec)``, the cluster as it is
when they were tried, the indexes of the nodes tried) -> the reason."""


@dataclass
class ClaimOutcome:
    """One claim's outcome: ``allocated``, ``unsatisfiable`` or ``error``; ``node``: where it
    was allocated (None when not, or when it came allocated)."""

    name: str
    namespace: str
    outcome: str
    reason: str
    allocation: dict[str, Any] | None
    claim: dict[str, Any]
    node: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "node": self.node,
            "outcome": self.outcome,
            "reason": self.reason,
            "allocation": self.allocation,
        }


@dataclass
class PodOutcome:
    """One pod with claims: the node it goes to, ``allocated`` when all its claims are, else
    the outcome of the first claim that is not."""

    name: str
    namespace: str
    node: str | None
    outcome: str
    reason: str
    claims: list[str]

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "node": self.node,
            "outcome": self.outcome,
            "reason": self.reason,
            "claims": self.claims,
        }


@dataclass
class Simulation:
    """Every claim's outcome (input order), every pod's, and the warnings about the input."""

    claims: list[ClaimOutcome] = field(default_factory=list)
    pods: list[PodOutcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def all_allocated(self) -> bool:
        return all(c.outcome == "allocated" for c in self.claims)


@dataclass
class _Claim:
    key: tuple[str, str]
    obj: dict[str, Any]
    spec: dict[str, Any]
    allocation: dict[str, Any] | None


@dataclass
class _Pod:
    namespace: str
    name: str
    keys: list[tuple[str, str]]


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _meta(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = _metadata(obj)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{obj.get('kind')} (no name): metadata.name: must be a non-empty string")
    return str(meta.get("namespace") or "default"), name


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of a named object ("" namespace when cluster-scoped); None
    without a name (generateName: each is a new object)."""
    meta = _metadata(obj)
    if not isinstance(meta.get("name"), str) or not meta.get("name"):
        return None
    kind = str(obj.get("kind"))
    namespace = "" if kind in _CLUSTER_SCOPED else str(meta.get("namespace") or "default")
    return kind, namespace, str(meta["name"])


def _last_of_each(objects: Sequence[Mapping[str, Any]], where: Sequence[str]) -> tuple[list[int], list[str]]:
    """The indexes of the objects that count (the last of each identity) and a warning per
    identity given more than once."""
    seen: dict[tuple[str, str, str], list[int]] = {}
    for i, obj in enumerate(objects):
        identity = _identity(obj)
        if identity is not None:
            seen.setdefault(identity, []).append(i)
    warnings = []
    for (kind, namespace, name), places in seen.items():
        if len(places) > 1:
            label = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
            which = "each is used, as the allocator lists them" if kind == "ResourceSlice" else "the last one counts"
            warnings.append(f"{label} appears {len(places)} times ({', '.join(where[i] for i in places)}): {which}")
    dropped = {i for (kind, _, _), places in seen.items() if kind != "ResourceSlice" for i in places[:-1]}
    return [i for i in range(len(objects)) if i not in dropped], warnings


def _pod_specs(obj: Mapping[str, Any], name: str) -> list[tuple[str, Mapping[str, Any]]]:
    kind = str(obj.get("kind"))
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
        self.order: list[Any] = []  # claim keys and pods, in input order
        self._named: Counter[tuple[str, str, str]] = Counter()
        pods: list[Mapping[str, Any]] = []
        for obj in objects:
            kind = obj.get("kind")
            if kind == "Node":
                labels = _metadata(obj).get("labels") or {}
                self.nodes.append(Node(_meta(obj)[1], {str(k): str(v) for k, v in labels.items()}))
            elif kind == "DeviceClass":
                self.classes[_meta(obj)[1]] = class_spec(obj)
            elif kind == "ResourceSlice":
                self.slices.append((_meta(obj)[1], slice_spec(obj)))
            elif kind == "ResourceClaimTemplate":
                self.templates[_meta(obj)] = obj
            elif kind == "ResourceClaim":
                key = _meta(obj)
                spec = claim_spec(obj, obj.get("spec"), f"{object_label(obj)}: spec")
                allocation = (obj.get("status") or {}).get("allocation")
                self.claims[key] = _Claim(key, dict(obj), spec, allocation)
                self.order.append(key)
            elif kind == "Pod" or kind in _WORKLOADS:
                pods.append(obj)
                self.order.append(len(pods) - 1)
        order = [self._pods(pods[item]) if isinstance(item, int) else item for item in self.order]
        referenced = {key for item in order if isinstance(item, list) for pod in item for key in pod.keys}
        self.order = [item for item in order if isinstance(item, list) or item not in referenced]

    def _name(self, obj: Mapping[str, Any]) -> str:
        """The object's name; one with only ``generateName`` gets the report's name for it,
        numbered from the second of one prefix."""
        meta = _metadata(obj)
        if meta.get("name") or not meta.get("generateName"):
            return _meta(obj)[1]
        name = pod_name(meta)
        key = (str(obj.get("kind")), str(meta.get("namespace") or "default"), name)
        self._named[key] += 1
        return name if self._named[key] == 1 else f"{name}#{self._named[key]}"

    def _pods(self, obj: Mapping[str, Any]) -> list[_Pod]:
        namespace = str(_metadata(obj).get("namespace") or "default")
        out = []
        for pod_name_, spec in _pod_specs(obj, self._name(obj)):
            keys = []
            entries = spec.get("resourceClaims") if isinstance(spec, Mapping) else None
            if not isinstance(entries, list | None):
                raise InputError(f"{object_label(obj)}: spec.resourceClaims: must be a list (core/v1 schema)")
            for i, entry in enumerate(entries or []):
                if not isinstance(entry, Mapping):
                    raise InputError(
                        f"{object_label(obj)}: spec.resourceClaims[{i}]: must be an object (core/v1 schema)"
                    )
                keys.append(self._claim_of(obj, namespace, pod_name_, i, entry))
            out.append(_Pod(namespace, pod_name_, keys))
        return out

    def _claim_of(
        self, obj: Mapping[str, Any], namespace: str, pod: str, i: int, entry: Mapping[str, Any]
    ) -> tuple[str, str]:
        where = f"{object_label(obj)}: spec.resourceClaims[{i}]"
        if entry.get("resourceClaimName"):
            key = (namespace, str(entry["resourceClaimName"]))
            if key not in self.claims:
                raise InputError(f"{where}.resourceClaimName: ResourceClaim {key[0]}/{key[1]} is not in the input")
            return key
        if not entry.get("resourceClaimTemplateName"):
            raise InputError(f"{where}: one of resourceClaimName or resourceClaimTemplateName must be set")
        template = self.templates.get((namespace, str(entry["resourceClaimTemplateName"])))
        if template is None:
            raise InputError(
                f"{where}.resourceClaimTemplateName: ResourceClaimTemplate {namespace}/"
                f"{entry['resourceClaimTemplateName']} is not in the input (put it before "
                "the objects that use it, as convert writes it)"
            )
        key = (namespace, f"{pod}-{entry.get('name')}")
        obj_claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": key[1], "namespace": namespace},
        }
        label = object_label(template)
        spec_v1 = claim_spec(template, (template.get("spec") or {}).get("spec"), f"{label}: spec.spec")
        self.claims[key] = _Claim(key, obj_claim, spec_v1, None)
        return key


class _Run:
    """One simulation: the cluster (FirstFit over the candidate nodes) and each claim's result."""

    def __init__(self, inputs: _Inputs, candidates: list[int], features: Features, cache: SelectorCache) -> None:
        self.inputs, self.candidates = inputs, candidates
        held = [c.allocation for c in inputs.claims.values() if c.allocation]
        self.cluster = FirstFit(inputs.nodes, inputs.slices, inputs.classes, features, cache, held)
        self.done: dict[tuple[str, str], tuple[str, str | None, Any]] = {}  # outcome, node, result or reason

    def holds(self, key: tuple[str, str]) -> Mapping[str, Any] | None:
        """The allocation the claim has (from the input or this run), or None."""
        claim = self.inputs.claims[key]
        if claim.allocation:
            return claim.allocation
        done = self.done.get(key)
        return done[2] if done is not None and done[0] == "allocated" else None

    def place(self, namespace: str, keys: Sequence[tuple[str, str]], explain: Explain | None) -> None:
        todo = list(dict.fromkeys(k for k in keys if self.holds(k) is None))
        if not todo:
            return
        selectors = [a["nodeSelector"] for k in keys if (a := self.holds(k)) is not None and a.get("nodeSelector")]
        nodes = self.inputs.nodes
        candidates = [i for i in self.candidates if all(selector_matches(s, nodes[i]) for s in selectors)]
        if not candidates:
            why = "no node is allowed by the node selectors of its claims already allocated"
            self.done.update({k: ("unsatisfiable", None, why) for k in todo})
            return
        claims = [(f"{k[0]}/{k[1]}", self.inputs.claims[k].spec) for k in todo]
        try:
            found = self.cluster.first_fit(claims, candidates)
        except PlacementError as exc:
            self.done.update({k: ("error", None, str(exc)) for k in todo})
            return
        if found is not None:
            node = nodes[found[0]].name
            self.done.update({k: ("allocated", node, result) for k, result in zip(todo, found[1], strict=True)})
            return
        if self.cluster.last_node_error == PER_NODE_ERROR and len(candidates) == 1:
            self.done.update({k: ("error", None, PER_NODE_ERROR) for k in todo})
            return
        plain = [(k[1], self.inputs.claims[k].spec) for k in todo]
        why = explain(namespace, plain, self.cluster, candidates) if explain else ""
        where = f"node {nodes[candidates[0]].name}" if len(candidates) == 1 else f"any of the {len(candidates)} nodes"
        why = f"cannot allocate all claims of its pod on {where}" + (f": {why}" if why else "")
        self.done.update({k: ("unsatisfiable", None, why) for k in todo})

    def outcome(self, claim: _Claim) -> ClaimOutcome:
        namespace, name = claim.key
        out = copy.deepcopy(claim.obj)
        if claim.allocation:
            return ClaimOutcome(name, namespace, "allocated", "already allocated", claim.allocation, out)
        kind, node, result = self.done.get(claim.key, ("unsatisfiable", None, "not tried"))
        if kind != "allocated":
            return ClaimOutcome(name, namespace, kind, str(result), None, out)
        out.setdefault("status", {})["allocation"] = result
        return ClaimOutcome(name, namespace, "allocated", "", result, out, node)


def _pod_outcome(pod: _Pod, claims: Mapping[tuple[str, str], ClaimOutcome]) -> PodOutcome:
    mine = [claims[k] for k in pod.keys]
    failed = next((c for c in mine if c.outcome != "allocated"), None)
    nodes = [c.node for c in mine if c.node]
    node = None if failed or not nodes else nodes[0]
    outcome, reason = (failed.outcome, failed.reason) if failed else ("allocated", "")
    return PodOutcome(pod.name, pod.namespace, node, outcome, reason, [c.name for c in mine])


def simulate(
    objects: Sequence[Mapping[str, Any]],
    features: Features,
    node: str | None = None,
    cache: SelectorCache | None = None,
    explain: Explain | None = None,
    where: Sequence[str] | None = None,
) -> Simulation:
    """Allocate every claim of ``objects`` (see the module docstring); ``where``: a label per
    object for the warnings (default: its position). Raises InputError."""
    labels = where if where is not None else [f"input object {i + 1}" for i in range(len(objects))]
    kept, warnings = _last_of_each(objects, labels)
    inputs = _Inputs([objects[i] for i in kept])
    candidates = list(range(len(inputs.nodes)))
    if node is not None:
        candidates = [i for i in candidates if inputs.nodes[i].name == node]
        if not candidates:
            raise InputError(
                f"--node {node}: no Node object of that name in the input (its labels decide which slices reach it)"
            )
    if not candidates:
        raise InputError(
            "no Node object in the input: simulate allocates on a node (add `kubectl get node NAME -o yaml`)"
        )
    run = _Run(inputs, candidates, features, cache or SelectorCache())
    for item in inputs.order:
        for pod in item if isinstance(item, list) else [_Pod(item[0], item[1], [item])]:
            run.place(pod.namespace, pod.keys, explain)
    claims = {k: run.outcome(c) for k, c in inputs.claims.items()}
    pods = [_pod_outcome(p, claims) for item in inputs.order if isinstance(item, list) for p in item if p.keys]
    return Simulation(list(claims.values()), pods, warnings)
