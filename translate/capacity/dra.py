"""The DRA model of the capacity check: converted pods placed one by one on the cluster's devices.

Pure (no I/O). Runs on :class:`translate.alloc.placement.FirstFit`, the project's one
cumulative first-fit loop: one :class:`~translate.alloc.AllocatedState` for the whole cluster
(devices are global: ``(driver, pool, device)``), so network-attached devices are shared by
every node they reach. A pod is placed as the scheduler's DRA plugin filters one node: its
claims still to allocate are allocated together by :class:`~translate.alloc.NodeAllocator`
(the upstream allocator's rules and order); the first eligible node
(:class:`translate.capacity.legacy.Eligibility`, nodes in the order given) where they fit wins
and its results hold their devices from then on. A shared claim (``resourceClaimName``) is
allocated by the first pod placed; later pods naming it may only go where its allocation's
node selector allows. An allocator error that is about one node (``invalid resource pools were
encountered``) only rules that node out; any other (unknown class, CEL runtime error, ...)
stops the pod at once: the scheduler reports such a pod as a scheduling error and retries it,
it never binds. When no node fits, :func:`~translate.capacity.diagnose.diagnose` says why.

Speed (FirstFit): a node's pools are gathered once; claims that failed on a node are never
tried there again (allocation only takes devices), whichever pod carries them; the eligible
nodes of one set of node constraints are one named list (a position in it per set of claims),
and a pod that fits nowhere is diagnosed by :class:`~translate.capacity.shortage.Shortage`
where its shape allows (a heap, not a scan of the nodes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dra_bridge.translate.alloc import Features, Node, NodeAllocator, SelectorCache
from dra_bridge.translate.alloc.node_match import selector_matches
from dra_bridge.translate.alloc.placement import FirstFit, PlacementError
from dra_bridge.translate.capacity.diagnose import MatchCache, diagnose
from dra_bridge.translate.capacity.legacy import Eligibility
from dra_bridge.translate.capacity.model import ClusterNode, Code, PodDemand
from dra_bridge.translate.capacity.shortage import Shortage

__all__ = ["DraModel", "Placed"]

Placed = tuple[str | None, Code, str, tuple[str, ...]]
"""(node, code, reason, devices as ``driver/pool/device``)."""


def _devices(allocation: Mapping[str, Any]) -> list[str]:
    return [f"{r['driver']}/{r['pool']}/{r['device']}" for r in (allocation.get("devices") or {}).get("results") or []]


class DraModel:
    """Converted pods placed cumulatively on ``slices`` (``(name, v1 spec)``)."""

    def __init__(
        self,
        nodes: Sequence[ClusterNode],
        slices: Sequence[tuple[str, Mapping[str, Any]]],
        classes: Mapping[str, Mapping[str, Any]],
        features: Features,
        held: Sequence[Mapping[str, Any]] = (),
        cache: SelectorCache | None = None,
    ) -> None:
        self.nodes, self.classes, self.features = list(nodes), classes, features
        self.views = [Node(node.name, node.labels) for node in self.nodes]
        self.fit = FirstFit(self.views, slices, classes, features, cache, held)
        self.cache, self.state = self.fit.cache, self.fit.state
        self.eligible = Eligibility(self.nodes)
        self._index = {node.name: i for i, node in enumerate(self.nodes)}
        self.shared_claims: dict[tuple[str, str], dict[str, Any]] = {}
        self._known: MatchCache = {}
        self._shortage = Shortage([node.name for node in self.nodes], self.state, self._known)

    def allocator(self, node: ClusterNode) -> NodeAllocator:
        """The node's allocator (its pools gathered once)."""
        return self.fit.allocator(self._index[node.name])

    def place(self, namespace: str, pod: PodDemand) -> Placed:
        """Place one pod (see the module docstring)."""
        group: str | None
        group, candidates, why = self.eligible.entry(pod.converted)
        if not candidates:
            return None, "node-selection", why, ()
        todo = [c for c in pod.claims if not (c.shared and (namespace, c.name) in self.shared_claims)]
        held = [self.shared_claims[(namespace, c.name)] for c in pod.claims if c not in todo]
        selectors = [a["nodeSelector"] for a in held if a.get("nodeSelector")]
        if selectors:
            candidates = [i for i in candidates if all(selector_matches(s, self.views[i]) for s in selectors)]
            group = None  # a list of its own
        if not candidates:
            return None, "node-selection", "no eligible node is allowed by its shared claims' allocations", ()
        devices = [d for allocation in held for d in _devices(allocation)]
        if not todo:
            return self.nodes[candidates[0]].name, "fits", "", tuple(devices)
        try:
            found = self.fit.first_fit([(f"{namespace}/{c.name}", c.spec) for c in todo], candidates, group=group)
        except PlacementError as exc:
            return None, "error", str(exc), ()
        if found is None:
            quick = self._shortage.diagnose(group, todo, candidates) if group is not None else None
            if quick is not None:
                return None, *quick, ()
            tried = [self.fit.allocator(i) for i in candidates]
            code, reason = diagnose(namespace, todo, tried, self.classes, self.state, self.cache, self._known)
            if group is not None and code != "error":
                self._shortage.learned(group, todo, candidates)
            return None, code, reason, ()
        index, results = found
        placed: list[str] = []
        for claim, allocation in zip(todo, results, strict=True):
            placed += _devices(allocation)
            if claim.shared:
                self.shared_claims[(namespace, claim.name)] = allocation
        return self.nodes[index].name, "fits", "", tuple(placed + devices)

    def local_devices(self, node: ClusterNode) -> set[tuple[str, str, str]]:
        """The devices of the node's own pools (slices or devices with its ``nodeName``)."""
        out = set()
        for pool in self.allocator(node).pools:
            for device in pool.devices:
                source = device.spec if device.slice.per_device else device.slice.spec
                if source.get("nodeName") == node.name:
                    out.add(device.id)
        return out
