"""Which checkpoint entries to collect, pure: facts in, a decision out (docs/design.md D30).

    usage = pod_resources_usage(list_json)                     PodResources ``List`` -> what containers use
    check = to_check(entries, usage)                           the claims worth an API read
    seen = {uid: claim_seen(get_result, uid)}                  each read: present, gone or unknown
    decision = collect(entries, seen, usage, gone_since, now, grace)

The kubelet unprepares a claim when its pods are gone; an entry outlives that only when the
kubelet lost its own DRA state (its ``dra_manager_state`` wiped, a node rebuilt under the same
state dir) and will never ask. Such an entry is unprepared and removed only when both hold:

1. its claim (namespace and name from the entry, compared by UID) has been gone from the API
   server, read as NotFound or as another object with another UID, on every read for longer than
   the grace period (``--claim-grace-period``; the clock starts at the first such read and starts
   again when the claim is read back; a read not made, or not answered, is no news);
2. the kubelet's PodResources ``List``, read on the same tick, shows no container on this node
   using the claim or any of its devices: as a DRA device (driver, pool, device), by the claim's
   name, or as a device-plugin device ID (a force-deleted pod can leave containers running).

Without a PodResources answer nothing is collected and nothing is read from the API server.
Only entries that no container uses are read at all, so a node whose claims are in use makes no
API call for this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Seen = Literal["present", "gone", "unknown"]


@dataclass(frozen=True)
class Entry:
    """One checkpointed claim, as collection sees it."""

    uid: str
    namespace: str
    name: str
    devices: frozenset[tuple[str, str, str]] = frozenset()
    """(driver, pool, device name) of each prepared device."""
    device_ids: frozenset[str] = frozenset()
    """The kubelet device IDs (device-plugin identity) of its devices."""


@dataclass(frozen=True)
class Usage:
    """What PodResources ``List`` shows containers of this node using."""

    claims: frozenset[tuple[str, str]] = frozenset()
    """(namespace, name) of claims named in containers' dynamic resources."""
    devices: frozenset[tuple[str, str, str]] = frozenset()
    """(driver, pool, device name) of DRA devices assigned to containers."""
    device_ids: frozenset[str] = frozenset()
    """Device-plugin device IDs assigned to containers."""

    def uses(self, entry: Entry) -> bool:
        """Whether some container uses ``entry``'s claim or one of its devices."""
        return (
            (entry.namespace, entry.name) in self.claims
            or not self.devices.isdisjoint(entry.devices)
            or not self.device_ids.isdisjoint(entry.device_ids)
        )


@dataclass(frozen=True)
class Decision:
    """The entries to unprepare now, and since when each gone claim has been gone (carry it to
    the next call)."""

    collect: tuple[str, ...] = ()
    gone_since: dict[str, float] = field(default_factory=dict)


def pod_resources_usage(listed: Mapping[str, Any]) -> Usage:
    """:class:`Usage` from ``ListPodResourcesResponse`` in its protobuf JSON mapping."""
    claims: set[tuple[str, str]] = set()
    devices: set[tuple[str, str, str]] = set()
    ids: set[str] = set()
    for pod in listed.get("podResources") or []:
        for container in pod.get("containers") or []:
            for d in container.get("devices") or []:
                ids.update(str(i) for i in d.get("deviceIds") or [])
            for dyn in container.get("dynamicResources") or []:
                claims.add((str(dyn.get("claimNamespace", "")), str(dyn.get("claimName", ""))))
                for r in dyn.get("claimResources") or []:
                    devices.add(
                        (str(r.get("driverName", "")), str(r.get("poolName", "")), str(r.get("deviceName", "")))
                    )
    return Usage(frozenset(claims), frozenset(devices), frozenset(ids))


def claim_seen(claim: Mapping[str, Any] | None, uid: str) -> Seen:
    """``present`` when the read claim has ``uid``; ``gone`` when the read found none (None) or a
    new claim of the same name (another UID)."""
    if claim is None:
        return "gone"
    return "present" if claim.get("metadata", {}).get("uid") == uid else "gone"


def to_check(entries: Iterable[Entry], usage: Usage | None) -> list[Entry]:
    """The entries whose claim is worth reading: none without PodResources, else those no
    container uses."""
    if usage is None:
        return []
    return [e for e in entries if not usage.uses(e)]


def collect(
    entries: Iterable[Entry],
    seen: Mapping[str, Seen],
    usage: Usage | None,
    gone_since: Mapping[str, float],
    now: float,
    grace: float,
) -> Decision:
    """The rule of the module docstring. ``seen``: this tick's reads (an entry not read counts as
    ``unknown``); ``gone_since``: the previous decision's."""
    since: dict[str, float] = {}
    out = []
    for e in entries:
        result = seen.get(e.uid, "unknown")
        if result == "present":
            continue  # the claim is there: the clock starts again
        first = gone_since.get(e.uid)
        if result == "unknown":  # not read (a container uses it) or no answer: keep the clock
            if first is not None:
                since[e.uid] = first
            continue
        since[e.uid] = first if first is not None else now
        if usage is not None and not usage.uses(e) and now - since[e.uid] >= grace:
            out.append(e.uid)
    return Decision(tuple(out), since)
