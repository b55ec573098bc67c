"""Node filters both models share, and the legacy (device-plugin) model's per-node counting.

Pure (no I/O). A node is eligible for a pod when (kube-scheduler's NodeName, NodeUnschedulable,
NodeAffinity and TaintToleration filters, as far as this rule goes):

- ``spec.nodeName``, when set, names it;
- every ``nodeSelector`` label has that value on the node;
- required node affinity: some ``nodeSelectorTerms`` term matches
  (:func:`translate.alloc.node_match.selector_matches`: labels, ``metadata.name``);
- every taint with effect ``NoSchedule`` or ``NoExecute`` is tolerated (an ``unschedulable``
  node counts as tainted ``node.kubernetes.io/unschedulable:NoSchedule``).

Not modelled (for both models alike): CPU, memory and pod counts, pod (anti-)affinity,
topology spread, preferred terms, host ports, volumes.

The legacy model counts extended resources per node: ``status.allocatable`` minus what held
pods (running, not placed by the check) and pods placed earlier hold; a pod fits on the first
eligible node (nodes in the order given) where each of its requests is at most what is left.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from dra_bridge.translate.alloc.node_match import Node, selector_matches
from dra_bridge.translate.capacity.model import ClusterNode, Code, NodeConstraints

__all__ = ["Eligibility", "LegacyModel", "eligible", "refusal", "tolerates"]

_UNSCHEDULABLE: Final = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """core/v1 ``Toleration.ToleratesTaint``: effect and key (empty matches any), then Exists or
    an equal value."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def refusal(node: ClusterNode, pod: NodeConstraints) -> str | None:
    """None when ``node`` is eligible for the pod, else which filter refuses it (``nodeName``,
    ``node selector``, ``node affinity`` or ``taint KEY[=VALUE]:EFFECT``)."""
    if pod.node_name and pod.node_name != node.name:
        return "nodeName"
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return "node selector"
    if pod.required_terms is not None and not selector_matches(
        {"nodeSelectorTerms": list(pod.required_terms)}, Node(node.name, node.labels)
    ):
        return "node affinity"
    taints = [*node.taints, *([_UNSCHEDULABLE] if node.unschedulable else [])]
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in pod.tolerations):
            value = f"={taint['value']}" if taint.get("value") else ""
            return f"taint {taint.get('key')}{value}:{taint.get('effect')}"
    return None


def eligible(nodes: Sequence[ClusterNode], pod: NodeConstraints) -> tuple[list[ClusterNode], str]:
    """The eligible nodes and, when there are none, the reason (``no node passes ...: 3 node
    selector, 1 taint ...``)."""
    out: list[ClusterNode] = []
    refused: Counter[str] = Counter()
    for node in nodes:
        why = refusal(node, pod)
        if why is None:
            out.append(node)
        else:
            refused[why] += 1
    if out:
        return out, ""
    if not nodes:
        return out, "no nodes"
    detail = ", ".join(f"{count} {why}" for why, count in sorted(refused.items()))
    return out, f"no node passes the pod's node constraints ({len(nodes)} nodes: {detail})"


class Eligibility:
    """:func:`eligible` over fixed ``nodes``, remembered per distinct node constraints (a
    workload's replicas share theirs): ``(indices of the eligible nodes, reason)``."""

    def __init__(self, nodes: Sequence[ClusterNode]) -> None:
        self.nodes = list(nodes)
        self._known: dict[str, tuple[list[int], str]] = {}

    def __call__(self, pod: NodeConstraints) -> tuple[list[int], str]:
        return self.entry(pod)[1:]

    def entry(self, pod: NodeConstraints) -> tuple[str, list[int], str]:
        """``(key, indices, reason)``: the key names the list (equal constraints, one list)."""
        key = repr(pod)
        found = self._known.get(key)
        if found is None:
            position = {id(node): i for i, node in enumerate(self.nodes)}
            nodes, why = eligible(self.nodes, pod)
            found = ([position[id(node)] for node in nodes], why)
            self._known[key] = found
        return key, *found


def _shortfall(requests: Mapping[str, int], allocatable: Mapping[str, int], used: Mapping[str, int]) -> tuple[int, str]:
    """The largest shortfall of ``requests`` on a node and its resource (``(0, "")``: it fits)."""
    missing = [(requests[r] - (allocatable.get(r, 0) - used[r]), r) for r in sorted(requests)]
    return max([m for m in missing if m[0] > 0], default=(0, ""))


class LegacyModel:
    """Extended resources per node, placed cumulatively; ``held``: ``{node: {resource: devices}}``.

    Linear in the cluster: what a node holds only grows, so per distinct node constraints and
    requests, the eligible nodes a pod did not fit on are skipped by the next (a position in
    the list), and a pod that fits nowhere finds the node of least shortfall in a heap of
    shortfalls checked lazily (each only grows: a stale entry is pushed back with its value)."""

    def __init__(self, nodes: Sequence[ClusterNode], held: Mapping[str, Mapping[str, int]] | None = None) -> None:
        self.nodes = list(nodes)
        self.eligible = Eligibility(self.nodes)
        self.before = {n.name: Counter(dict((held or {}).get(n.name, {}))) for n in nodes}
        self.used = {name: Counter(c) for name, c in self.before.items()}
        self._position: dict[tuple[str, str], int] = {}
        self._short: dict[tuple[str, str], list[tuple[int, int]]] = {}

    def place(self, requests: Mapping[str, int], pod: NodeConstraints) -> tuple[str | None, Code, str]:
        """Place a pod: ``(node, "fits", "")`` or ``(None, code, reason)`` (the first eligible
        node, nodes in the order given, where each request is at most what is left; else the
        eligible node of least shortfall, the first of equals)."""
        group, indices, why = self.eligible.entry(pod)
        if not indices:
            return None, "node-selection", why
        key = (group, repr(sorted(requests.items())))
        position = self._position.get(key, 0)
        while position < len(indices):
            node = self.nodes[indices[position]]
            used = self.used[node.name]
            if _shortfall(requests, node.allocatable, used)[0] == 0:
                for resource, count in requests.items():
                    used[resource] += count
                self._position[key] = position
                return node.name, "fits", ""
            position += 1
        self._position[key] = position
        node = self.nodes[indices[self._least(key, requests, indices)]]
        _, resource = _shortfall(requests, node.allocatable, self.used[node.name])
        left = node.allocatable.get(resource, 0) - self.used[node.name][resource]
        return (
            None,
            "not-enough-devices",
            (
                f"needs {requests[resource]} {resource}: at most {left} left on one "
                f"eligible node (of {node.allocatable.get(resource, 0)} allocatable; {len(indices)} "
                "eligible nodes)"
            ),
        )

    def _least(self, key: tuple[str, str], requests: Mapping[str, int], indices: Sequence[int]) -> int:
        """The position (in ``indices``) of the first node of least shortfall."""

        def short(position: int) -> int:
            node = self.nodes[indices[position]]
            return _shortfall(requests, node.allocatable, self.used[node.name])[0]

        heap = self._short.get(key)
        if heap is None:
            heap = [(short(p), p) for p in range(len(indices))]
            heapq.heapify(heap)
            self._short[key] = heap
        while True:
            recorded, position = heap[0]
            now = short(position)
            if now == recorded:
                return position
            heapq.heapreplace(heap, (now, position))
