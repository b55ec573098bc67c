"""The DRA model of the capacity check: converted pods placed one by one on the cluster's devices.

Pure (no I/O). One :class:`~translate.alloc.AllocatedState` for the whole cluster (devices are
global: ``(driver, pool, device)``), so network-attached devices are shared by every node
they reach. A pod is placed as the scheduler's DRA plugin filters one node: its claims still
to allocate are allocated together by :class:`~translate.alloc.NodeAllocator` (the upstream
allocator's rules and order); the first eligible node (:func:`translate.capacity.legacy.eligible`,
nodes in the order given) where they fit wins and its results hold their devices from then on.
A shared claim (``resourceClaimName``) is allocated by the first pod placed; later pods
naming it may only go where its allocation's node selector allows. An allocator error (unknown
class, CEL runtime error, ...) stops the pod at once: the scheduler reports such a pod as a
scheduling error and retries it, it never binds. When no node fits, :func:`~translate.capacity.
diagnose.diagnose` says why.

Speed: a node's pools are gathered once; a pod whose claims failed on a node is not tried
there again until something is allocated from that node's devices.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from dra_bridge.translate.alloc import AllocatedState, Features, Node, NodeAllocator, SelectorCache, gather_pools
from dra_bridge.translate.alloc.node_match import selector_matches
from dra_bridge.translate.capacity.diagnose import MatchCache, diagnose
from dra_bridge.translate.capacity.legacy import Eligibility
from dra_bridge.translate.capacity.model import ClusterNode, Code, PodDemand
from dra_bridge.translate.errors import AllocationError

__all__ = ["DraModel", "Placed"]

Placed = tuple[str | None, Code, str, tuple[str, ...]]
"""(node, code, reason, devices as ``driver/pool/device``)."""


class DraModel:
    """Converted pods placed cumulatively on ``slices`` (``(name, v1 spec)``)."""

    def __init__(self, nodes: Sequence[ClusterNode], slices: Sequence[tuple[str, Mapping[str, Any]]],
                 classes: Mapping[str, Mapping[str, Any]], features: Features,
                 held: Sequence[Mapping[str, Any]] = (), cache: SelectorCache | None = None) -> None:
        self.nodes, self.classes, self.features = list(nodes), classes, features
        self.eligible = Eligibility(self.nodes)
        self.cache = cache or SelectorCache()
        self.state = AllocatedState()
        for allocation in held:
            self.state.add_allocation(allocation)
        by_pool: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
        for name, spec in slices:
            by_pool.setdefault((str(spec["driver"]), str(spec["pool"]["name"])), []).append((name, spec))
        self.pool_nodes: dict[tuple[str, str], frozenset[str] | None] = {}
        self._slices_of: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        shared: list[tuple[str, Mapping[str, Any]]] = []
        for key, members in by_pool.items():
            named = {spec.get("nodeName") for _, spec in members}
            if None in named:
                self.pool_nodes[key] = None
                shared += members
            else:
                self.pool_nodes[key] = frozenset(str(n) for n in named)
                for node in named:
                    self._slices_of.setdefault(str(node), []).extend(members)
        self._shared = shared
        self._allocators: dict[str, NodeAllocator] = {}
        self._version: dict[str, int] = {}
        self._global = 0
        self._failed: dict[tuple[str, str], tuple[int, int]] = {}
        self.shared_claims: dict[tuple[str, str], dict[str, Any]] = {}
        self._known: MatchCache = {}

    def allocator(self, node: ClusterNode) -> NodeAllocator:
        """The node's allocator (its pools gathered once)."""
        found = self._allocators.get(node.name)
        if found is None:
            view = Node(node.name, node.labels)
            pools = gather_pools([*self._slices_of.get(node.name, []), *self._shared], view)
            found = NodeAllocator(view, pools, self.classes, self.features, self.state, self.cache)
            self._allocators[node.name] = found
        return found

    def _hold(self, allocation: Mapping[str, Any]) -> list[str]:
        self.state.add_allocation(allocation)
        devices = []
        for result in (allocation.get("devices") or {}).get("results") or []:
            devices.append(f"{result['driver']}/{result['pool']}/{result['device']}")
            nodes = self.pool_nodes.get((str(result["driver"]), str(result["pool"])))
            if nodes is None:
                self._global += 1
            else:
                for node in nodes:
                    self._version[node] = self._version.get(node, 0) + 1
        return devices

    def place(self, namespace: str, pod: PodDemand) -> Placed:
        """Place one pod (see the module docstring)."""
        candidates, why = self.eligible(pod.converted)
        if not candidates:
            return None, "node-selection", why, ()
        todo = [c for c in pod.claims if not (c.shared and (namespace, c.name) in self.shared_claims)]
        held = [self.shared_claims[(namespace, c.name)] for c in pod.claims if c not in todo]
        shape = None if any(c.shared for c in pod.claims) else json.dumps([c.spec for c in todo], sort_keys=True)
        tried: list[NodeAllocator] = []
        for node in candidates:
            if any(a.get("nodeSelector") and not selector_matches(a["nodeSelector"], Node(node.name, node.labels))
                   for a in held):
                continue
            stamp = (self._version.get(node.name, 0), self._global)
            allocator = self.allocator(node)
            tried.append(allocator)
            if shape is not None and self._failed.get((shape, node.name)) == stamp:
                continue
            try:
                results = allocator.allocate([(f"{namespace}/{c.name}", c.spec) for c in todo]) if todo else []
            except AllocationError as exc:
                return None, "error", str(exc), ()
            if results is None:
                if shape is not None:
                    self._failed[(shape, node.name)] = stamp
                continue
            devices: list[str] = []
            for claim, allocation in zip(todo, results, strict=True):
                devices += self._hold(allocation)
                if claim.shared:
                    self.shared_claims[(namespace, claim.name)] = allocation
            for allocation in held:
                devices += [f"{r['driver']}/{r['pool']}/{r['device']}"
                            for r in (allocation.get("devices") or {}).get("results") or []]
            return node.name, "fits", "", tuple(devices)
        if not tried:
            return None, "node-selection", "no eligible node is allowed by its shared claims' allocations", ()
        code, reason = diagnose(namespace, todo, tried, self.classes, self.state, self.cache, self._known)
        return None, code, reason, ()

    def local_devices(self, node: ClusterNode) -> set[tuple[str, str, str]]:
        """The devices of the node's own pools (slices or devices with its ``nodeName``)."""
        out = set()
        for pool in self.allocator(node).pools:
            for device in pool.devices:
                source = device.spec if device.slice.per_device else device.slice.spec
                if source.get("nodeName") == node.name:
                    out.add(device.id)
        return out
