"""First-fit placement of many pods over many nodes: each pod's claims on the first node where they fit.

Pure (no I/O). The one cumulative first-fit loop of the project: ``simulate``'s many-pod
placement (:func:`place`) and the report's capacity check (:class:`translate.capacity.dra.
DraModel`) both run on :class:`FirstFit`. Input: the Nodes in order, ResourceSlices (v1
``(name, spec)``), DeviceClasses (v1 specs), and optionally allocations already held. Each
pod's claims are allocated together by :class:`translate.alloc.engine.NodeAllocator` on the
first node (of those the caller allows) where they fit, cumulatively: one
:class:`~translate.alloc.state.AllocatedState` for the whole cluster (devices are global,
``(driver, pool, device)``, so a network-attached device taken through one node is taken for
all). The answer for every pod is exactly what trying each node in order with the engine would
give; three indexes make it fast at cluster scale (issue 12's benchmark: 50,000 pods, 2,000
nodes):

- slices by node: a node's pools are gathered from the pools that have a slice naming it or
  a slice for several nodes (``allNodes``, ``nodeSelector``, per-device selection, counters),
  not from every slice of the cluster;
- a node's allocator (its pools) is built when first tried;
- allocation only ever takes devices (exclusive devices, capacity, counters), so a set of
  claims that did not fit on a node never fits there later: per distinct set of claim specs
  the nodes ruled out are remembered (a cursor below which all are, and a set above it), and
  identical pods (a Deployment's replicas) skip them; a caller that names its candidate list
  (``group``: the same key always with the same list, e.g. the pods' node constraints) gets a
  position in that list per signature instead, so a pod costs the nodes it tries, not the list;
- the same signature tells a node's allocator to reuse the requests it validated for those
  specs (and what each remembers of the node's devices): a replica costs the search, not the
  validation (:meth:`~translate.alloc.engine.NodeAllocator.allocate`).

Outcomes of :func:`place`: ``allocated`` (with the node and one ``status.allocation`` per
claim), ``unsatisfiable`` (no node fits; the reason names the last per-node error, e.g.
``invalid resource pools were encountered``, when there was one) or ``error`` (an
:class:`~translate.errors.AllocationError` that is not about one node, such as a CEL runtime
error: the scheduler stops there for the pod, so does this).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dra_bridge.translate.alloc.engine import NodeAllocator
from dra_bridge.translate.alloc.features import Features
from dra_bridge.translate.alloc.node_match import Node
from dra_bridge.translate.alloc.pools import gather_pools
from dra_bridge.translate.alloc.selectors import SelectorCache
from dra_bridge.translate.alloc.state import AllocatedState
from dra_bridge.translate.errors import AllocationError

__all__ = ["FirstFit", "PlacementError", "PodPlacement", "place"]

PER_NODE_ERROR: Final = "invalid resource pools were encountered"
"""The one allocator error that is about a node only (ErrFailedAllocationOnNode)."""

Claims = Sequence[tuple[str, Mapping[str, Any]]]


class PlacementError(AllocationError):
    """An allocator error that is not about one node (CEL runtime error, unknown class...):
    the scheduler stops trying nodes for the pod. ``node``: the node being tried."""

    def __init__(self, message: str, node: str) -> None:
        super().__init__(message)
        self.node = node


@dataclass
class PodPlacement:
    """Where one pod went: ``outcome`` is ``allocated``, ``unsatisfiable`` or ``error``."""

    pod: str
    outcome: str
    node: str | None = None
    reason: str = ""
    allocations: list[dict[str, Any]] | None = None


class FirstFit:
    """Cumulative first fit over ``nodes`` (see the module docstring); ``held``: allocations
    (``status.allocation``) that hold their devices from the start."""

    def __init__(
        self,
        nodes: Sequence[Node],
        slices: Sequence[tuple[str, Mapping[str, Any]]],
        classes: Mapping[str, Mapping[str, Any]],
        features: Features,
        cache: SelectorCache | None = None,
        held: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        self.nodes, self.classes, self.features = list(nodes), classes, features
        self.cache = cache or SelectorCache()
        self.state = AllocatedState()
        for allocation in held:
            self.state.add_allocation(allocation)
        by_pool: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
        self._named: dict[str, set[tuple[str, str]]] = {}
        self._wide: set[tuple[str, str]] = set()
        for name, spec in slices:
            pid = (str(spec["driver"]), str(spec["pool"]["name"]))
            by_pool.setdefault(pid, []).append((name, spec))
            if spec.get("nodeName") and not spec.get("sharedCounters"):
                self._named.setdefault(str(spec["nodeName"]), set()).add(pid)
            else:
                self._wide.add(pid)
        self._by_pool = by_pool
        self._order = {pid: i for i, pid in enumerate(by_pool)}
        self._allocators: dict[int, NodeAllocator] = {}
        self._ruled_out: dict[str, tuple[int, set[int]]] = {}
        self._position: dict[tuple[str, Hashable], int] = {}
        self.last_node_error = ""
        """The last per-node error met by :meth:`first_fit` (``""`` when none)."""

    def allocator(self, index: int) -> NodeAllocator:
        """The allocator of ``nodes[index]`` (its pools gathered once; the cluster's state)."""
        allocator = self._allocators.get(index)
        if allocator is None:
            node = self.nodes[index]
            pids = sorted(self._named.get(node.name, set()) | self._wide, key=self._order.__getitem__)
            slices = [s for pid in pids for s in self._by_pool[pid]]
            pools = gather_pools(slices, node, self.features.partitionable_devices)
            allocator = NodeAllocator(node, pools, self.classes, self.features, self.state, self.cache)
            self._allocators[index] = allocator
        return allocator

    def first_fit(
        self,
        claims: Claims,
        candidates: Sequence[int] | None = None,
        hold: bool = True,
        group: Hashable | None = None,
    ) -> tuple[int, list[dict[str, Any]]] | None:
        """The first node index (of ``candidates``, ascending; every node when None) where
        ``claims`` fit together and their allocations, which then hold their devices unless
        ``hold`` is false; None when none fits (:attr:`last_node_error` says whether a per-node
        error was met). Raises :class:`PlacementError` for an allocator error that is not about
        one node. ``group``: a key naming ``candidates`` (always the same list for one key)."""
        self.last_node_error = ""
        # Equal specs written in another key order get their own memory: slower, never wrong.
        signature = repr([spec for _, spec in claims])
        if group is not None and candidates is not None:
            return self._in_group(claims, candidates, hold, signature, group)
        cursor, beyond = self._ruled_out.get(signature, (0, set()))
        order: Iterable[int] = range(cursor, len(self.nodes)) if candidates is None else candidates
        try:
            for index in order:
                if index < cursor or index in beyond:
                    continue
                allocator = self.allocator(index)
                try:
                    results = allocator.allocate(claims, signature)
                except AllocationError as exc:
                    if str(exc) != PER_NODE_ERROR:
                        raise PlacementError(str(exc), self.nodes[index].name) from exc
                    results, self.last_node_error = None, str(exc)
                if results is not None:
                    for result in results if hold else ():
                        self.state.add_allocation(result)
                    return index, results
                if index == cursor:
                    cursor += 1
                    while cursor in beyond:
                        beyond.discard(cursor)
                        cursor += 1
                else:
                    beyond.add(index)
            return None
        finally:
            self._ruled_out[signature] = (cursor, beyond)

    def _try(self, index: int, claims: Claims, signature: str) -> list[dict[str, Any]] | None:
        try:
            return self.allocator(index).allocate(claims, signature)
        except AllocationError as exc:
            if str(exc) != PER_NODE_ERROR:
                raise PlacementError(str(exc), self.nodes[index].name) from exc
            self.last_node_error = str(exc)
            return None

    def _in_group(
        self, claims: Claims, candidates: Sequence[int], hold: bool, signature: str, group: Hashable
    ) -> tuple[int, list[dict[str, Any]]] | None:
        """:meth:`first_fit` over a named candidate list: the candidates before the signature's
        position there were ruled out (for good: allocation only takes devices)."""
        key = (signature, group)
        position = self._position.get(key, 0)
        try:
            while position < len(candidates):
                index = candidates[position]
                results = self._try(index, claims, signature)
                if results is not None:
                    for result in results if hold else ():
                        self.state.add_allocation(result)
                    return index, results
                position += 1
            return None
        finally:
            self._position[key] = position


def place(
    pods: Sequence[tuple[str, Claims]],
    nodes: Sequence[Node],
    slices: Sequence[tuple[str, Mapping[str, Any]]],
    classes: Mapping[str, Mapping[str, Any]],
    features: Features,
    cache: SelectorCache | None = None,
    cumulative: bool = True,
) -> list[PodPlacement]:
    """Place every pod ``(label, claims)`` in order (see the module docstring); one
    :class:`PodPlacement` per pod. ``cumulative=False``: every pod against the starting state,
    nothing held (the report's per-pod question "does it fit the cluster as it is", as the
    scheduler answers it for one pending pod)."""
    cluster = FirstFit(nodes, slices, classes, features, cache)
    out: list[PodPlacement] = []
    for label, claims in pods:
        if not claims:
            out.append(PodPlacement(label, "allocated", None, "no claims", []))
            continue
        try:
            found = cluster.first_fit(claims, hold=cumulative)
        except PlacementError as exc:
            out.append(PodPlacement(label, "error", exc.node, str(exc)))
            continue
        if found is not None:
            out.append(PodPlacement(label, "allocated", cluster.nodes[found[0]].name, "", found[1]))
            continue
        reason = cluster.last_node_error
        why = f"no node fits its claims ({reason})" if reason else "no node fits its claims"
        out.append(PodPlacement(label, "unsatisfiable", None, why))
    return out
