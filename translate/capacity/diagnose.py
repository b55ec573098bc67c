"""Why a converted pod fits on no node: the verdict code and reason for the capacity check.

Pure (no I/O). Called only after the allocator found no node (:mod:`translate.capacity.dra`).
For every request of the pod's claims still to allocate (a ``firstAvailable`` request by
each of its subrequests), on every eligible node, it counts the devices that match the
request's class and selectors (CEL through the shared :class:`~translate.alloc.SelectorCache`;
incomplete and invalid pools left out, as the allocator skips them) and those of them that
are free (not allocated exclusively). Then, in this order:

- ``no-matching-device``: a request matches no device on any eligible node
  (``claim C, request R: no device of the N eligible nodes matches class X and selector E``);
- ``constraint``: some node has enough free matching devices for every request (requests with
  the same class and selectors summed; ``All`` needs every matching device free; a
  ``firstAvailable`` request is satisfied by any subrequest), so the devices exist but not
  together: a claim constraint (named), or taints, consumable capacity or shared counters;
- ``not-enough-devices``: otherwise; the reason names the request with the most free
  matching devices on one node (``needs N devices of class X: at most F free on one eligible
  node (M match there)``).

A CEL runtime error met while counting gives ``error`` with the allocator's message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.alloc import AllocatedState, NodeAllocator, SelectorCache
from dra_bridge.translate.alloc.node_match import node_matches
from dra_bridge.translate.alloc.pools import Candidate, DeviceID
from dra_bridge.translate.capacity.model import ClaimDemand, Code
from dra_bridge.translate.errors import AllocationError

__all__ = ["MatchCache", "Option", "diagnose", "options"]


@dataclass(frozen=True)
class Option:
    """One way to satisfy a request (a ``firstAvailable`` request has one per subrequest)."""

    claim: str
    request: str
    class_name: str
    selectors: tuple[str, ...]
    count: int
    all_devices: bool
    key: str

    def what(self) -> str:
        text = f"class {self.class_name}"
        return text + "".join(f" and selector `{s}`" for s in self.selectors)


def options(claim: ClaimDemand) -> list[list[Option]]:
    """The claim's requests in order, each as its options (``key``: class and selectors)."""
    out = []
    for request in (claim.spec.get("devices") or {}).get("requests") or []:
        bodies = (
            [(f"{request['name']}/{s['name']}", s) for s in request["firstAvailable"]]
            if request.get("firstAvailable")
            else [(request["name"], request["exactly"])]
        )
        entry = []
        for name, body in bodies:
            class_name = str(body.get("deviceClassName"))
            selectors = tuple(str(s["cel"]["expression"]) for s in body.get("selectors") or [])
            entry.append(
                Option(
                    claim.name,
                    name,
                    class_name,
                    selectors,
                    int(body.get("count") or 0),
                    body.get("allocationMode") == "All",
                    json.dumps([class_name, selectors]),
                )
            )
        out.append(entry)
    return out


MatchCache = dict[tuple[str, str], frozenset[DeviceID]]
"""The devices of a node (by name) that match a class and selectors (by option key): static."""


def _count(
    allocator: NodeAllocator,
    option: Option,
    classes: Mapping[str, Mapping[str, Any]],
    state: AllocatedState,
    cache: SelectorCache,
    namespace: str,
    known: MatchCache,
) -> tuple[int, int]:
    """(matching, free) devices of ``option`` on the allocator's node."""
    ids = known.get((allocator.node.name, option.key))
    if ids is None:
        class_selectors = (classes.get(option.class_name) or {}).get("selectors") or []
        own = [{"cel": {"expression": s}} for s in option.selectors]
        ids = frozenset(
            device.id
            for pool in allocator.pools
            if not (pool.incomplete or pool.invalid)
            for device in pool.devices
            if _matches(allocator, device, class_selectors, own, option, cache, namespace)
        )
        known[(allocator.node.name, option.key)] = ids
    return len(ids), sum(1 for i in ids if i not in state.devices)


def _matches(
    allocator: NodeAllocator,
    device: Candidate,
    class_selectors: Sequence[Mapping[str, Any]],
    own: Sequence[Mapping[str, Any]],
    option: Option,
    cache: SelectorCache,
    namespace: str,
) -> bool:
    if device.slice.per_device and not node_matches(
        allocator.node, device.spec.get("nodeName"), bool(device.spec.get("allNodes")), device.spec.get("nodeSelector")
    ):
        return False
    return cache.matches(class_selectors, device, f"class {option.class_name}") and cache.matches(
        own, device, f"claim {namespace}/{option.claim}"
    )


def _constraints(claims: Sequence[ClaimDemand]) -> str:
    parts = []
    for claim in claims:
        for constraint in (claim.spec.get("devices") or {}).get("constraints") or []:
            kind = "matchAttribute" if constraint.get("matchAttribute") else "distinctAttribute"
            over = ", ".join(constraint.get("requests") or []) or "every request"
            parts.append(f"claim {claim.name}: {kind} {constraint.get(kind)} over {over}")
    return "; ".join(parts)


def diagnose(
    namespace: str,
    claims: Sequence[ClaimDemand],
    allocators: Sequence[NodeAllocator],
    classes: Mapping[str, Mapping[str, Any]],
    state: AllocatedState,
    cache: SelectorCache,
    known: MatchCache | None = None,
) -> tuple[Code, str]:
    """The code and reason (see the module docstring) for claims that fit on none of ``allocators``;
    ``known`` keeps the matching devices per node and selectors across calls (devices do not
    change during a check)."""
    requests = [entry for claim in claims for entry in options(claim)]
    known = {} if known is None else known
    try:
        counts = [
            {o: _count(a, o, classes, state, cache, namespace, known) for entry in requests for o in entry}
            for a in allocators
        ]
    except AllocationError as exc:
        return "error", str(exc)
    for entry in requests:
        if all(counts[n][o][0] == 0 for n in range(len(allocators)) for o in entry):
            first = entry[0]
            return "no-matching-device", (
                f"claim {first.claim}, request {first.request}: no device of the "
                f"{len(allocators)} eligible nodes matches {first.what()}"
            )
    best: tuple[int, int, Option, str] | None = None  # (free, matching, option, node)
    for n, allocator in enumerate(allocators):
        need: dict[str, int] = {}
        free: dict[str, int] = {}
        for entry in requests:
            usable = [o for o in entry if counts[n][o][1] >= (counts[n][o][0] if o.all_devices else o.count)]
            option = usable[0] if usable else entry[0]
            matching, free[option.key] = counts[n][option]
            need[option.key] = need.get(option.key, 0) + (matching if option.all_devices else option.count)
            if best is None or counts[n][option][1] > best[0]:
                best = (counts[n][option][1], matching, option, allocator.node.name)
        if all(free[key] >= count for key, count in need.items()):
            why = _constraints(claims)
            detail = (
                f"a claim constraint cannot be satisfied ({why})"
                if why
                else "device taints, consumable capacity or shared counters refuse them"
            )
            return "constraint", (
                f"node {allocator.node.name} has enough free devices for each request, but not together: {detail}"
            )
    assert best is not None
    free_count, matching, option, node = best
    need_count = matching if option.all_devices else option.count
    return "not-enough-devices", (
        f"claim {option.claim}, request {option.request} needs {need_count} devices of "
        f"{option.what()}: at most {free_count} free on one eligible node "
        f"({node}: {matching} match there)"
    )
