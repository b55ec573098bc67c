"""Device requests that give every container exactly its legacy devices (docs/design.md D3).

For one legacy resource the legacy scheduler counted, per pod::

    devices = max(effective_init, sum(app containers) + sum(sidecars))
    effective_init = max over regular init containers i of (init_i + sidecars declared before i)

because the kubelet lets later containers reuse an init container's devices. The layout
builds that many device *units* and hands them out:

- each app container owns its own units; each sidecar (an init container with
  ``restartPolicy: Always``, running beside everything) owns its own units;
- a regular init container borrows units, first-declared app containers first, then units
  of sidecars declared after it (they start only when it has finished), then *extra* units
  that exist only because some init container needs more than the others hold.

Units with the same owner and the same set of borrowers become one request, so an app
container is split into several requests only where an init container must reference a
subset of its devices; a request never exceeds ``max_count`` devices (32 per claim:
resource.k8s.io/v1 AllocationResultsMaxSize). Each container then references whole requests,
and the devices it sees add up to its legacy count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from dra_bridge.translate.inventory.api_rules import MAX_DEVICES_PER_CLAIM

Role = Literal["app", "init", "sidecar"]


@dataclass(frozen=True)
class Demand:
    """One container's legacy count of one resource. ``order`` is the container's position
    among init containers (for inits and sidecars) or app containers."""

    container: str
    role: Role
    order: int
    count: int


@dataclass(frozen=True)
class RequestPart:
    """A request to create: ``owner`` names the container it is derived from (the first init
    container that needs it, for extra units), ``users`` every container that references it."""

    owner: str
    count: int
    users: tuple[str, ...]


def layout(demands: Sequence[Demand], max_count: int = MAX_DEVICES_PER_CLAIM) -> list[RequestPart]:
    """Requests for one resource, in a stable order: apps, sidecars, extra units.

    ``demands`` with a count of 0 are ignored. The sum of counts equals the legacy pod total
    and, for each container, the counts of the requests it uses add up to its own count.
    """
    live = [d for d in demands if d.count > 0]
    apps = sorted((d for d in live if d.role == "app"), key=lambda d: d.order)
    sidecars = sorted((d for d in live if d.role == "sidecar"), key=lambda d: d.order)
    inits = sorted((d for d in live if d.role == "init"), key=lambda d: d.order)

    app_total = sum(d.count for d in apps)
    side_total = sum(d.count for d in sidecars)
    effective_init = max((i.count + sum(s.count for s in sidecars if s.order < i.order) for i in inits), default=0)
    extra = max(0, effective_init - app_total - side_total)
    extra_owner = next(
        (
            i.container
            for i in inits
            if i.count + sum(s.count for s in sidecars if s.order < i.order) > app_total + side_total
        ),
        "",
    )

    # Units: (owner, index). Borrowers are recorded per unit.
    owners: list[str] = []
    for d in apps + sidecars:
        owners += [d.container] * d.count
    owners += [extra_owner] * extra
    borrowers: list[set[str]] = [set() for _ in owners]
    app_units = list(range(app_total))
    side_start = app_total
    extra_units = list(range(app_total + side_total, app_total + side_total + extra))
    for init in inits:
        after: list[int] = []
        pos = side_start
        for s in sidecars:
            if s.order > init.order:
                after += range(pos, pos + s.count)
            pos += s.count
        for unit in (app_units + after + extra_units)[: init.count]:
            borrowers[unit].add(init.container)

    # Group consecutive units with the same owner and borrowers.
    parts: list[RequestPart] = []
    run_key: tuple[str, frozenset[str]] | None = None
    run_len = 0

    def flush() -> None:
        if run_key is None or run_len == 0:
            return
        owner, users = run_key
        left = run_len
        while left > 0:
            chunk = min(left, max_count)
            parts.append(RequestPart(owner, chunk, _ordered_users(owner, users, demands)))
            left -= chunk

    for unit, owner in enumerate(owners):
        key = (owner, frozenset(borrowers[unit]))
        if key != run_key:
            flush()
            run_key, run_len = key, 0
        run_len += 1
    flush()
    return parts


def _ordered_users(owner: str, borrowers: frozenset[str], demands: Sequence[Demand]) -> tuple[str, ...]:
    names = [owner] if any(d.container == owner and d.role != "init" for d in demands) else []
    names += [d.container for d in demands if d.container in borrowers and d.container not in names]
    if not names:
        names = [owner]
    return tuple(dict.fromkeys(names))


def legacy_total(demands: Sequence[Demand]) -> int:
    """The devices the legacy scheduler counted for the pod (the formula above)."""
    apps = sum(d.count for d in demands if d.role == "app")
    sidecars = [d for d in demands if d.role == "sidecar"]
    effective_init = max(
        (d.count + sum(s.count for s in sidecars if s.order < d.order) for d in demands if d.role == "init"),
        default=0,
    )
    return max(effective_init, apps + sum(s.count for s in sidecars))
