"""Health that withdraws: a device taint for a device unhealthy long enough (pure; docs/design.md D42).

- :func:`step`: per device, ``dra-bridge.io/unhealthy`` (effect ``NoSchedule``) is set once the
  device has been unhealthy for ``taint_after`` seconds (default 60) and removed once it has been
  healthy (not unhealthy) for ``clear_after`` seconds (default 300); each change is reported.
- :func:`with_taints`: the slice devices with their taints where the API server keeps the field,
  or without the tainted devices where it drops it (the ``DRADeviceTaints`` gate is alpha and off in
  1.33-1.35, beta and on in 1.36: the field exists in v1, v1beta2 and v1beta1 ``basic``, but is
  dropped silently while the gate is off);
- :func:`taints_dropped`: whether the object a create or update returned lost taints we sent (the
  only reliable sign: discovery does not say which fields a gate strips);
- :func:`taints_by_device`: each device's taints (a removed taint is a change a subset check misses);
- :func:`max_devices`: a slice with a tainted device holds at most :data:`MAX_DEVICES_WITH_TAINTS`
  (ResourceSliceMaxDevicesWithTaintsOrConsumesCounters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TAINT_KEY = "dra-bridge.io/unhealthy"
TAINT_EFFECT = "NoSchedule"
TAINT_AFTER = 60.0
CLEAR_AFTER = 300.0
MAX_DEVICES_WITH_TAINTS = 64
MAX_DEVICES = 128


@dataclass(frozen=True)
class TaintState:
    """One device: whether it is tainted, since when (``time_added``, RFC 3339 text from the
    caller's clock) and since when its health has been what it is now (``since``, seconds)."""

    unhealthy: bool = False
    since: float = 0.0
    tainted: bool = False
    time_added: str = ""


def step(
    prev: Mapping[str, TaintState],
    unhealthy: Mapping[str, bool],
    now: float,
    stamp: str,
    taint_after: float = TAINT_AFTER,
    clear_after: float = CLEAR_AFTER,
) -> tuple[dict[str, TaintState], list[tuple[str, str]]]:
    """The new state of every device of ``unhealthy`` (device name -> unhealthy now) and the
    changes, ``(device, "tainted" | "cleared")``, sorted. ``stamp`` is ``now`` as RFC 3339."""
    out: dict[str, TaintState] = {}
    changes: list[tuple[str, str]] = []
    for name in sorted(unhealthy):
        bad = unhealthy[name]
        old = prev.get(name)
        state = (
            old
            if old is not None and old.unhealthy == bad
            else TaintState(bad, now, old.tainted if old else False, old.time_added if old else "")
        )
        held = now - state.since
        if bad and not state.tainted and held >= taint_after:
            state = TaintState(True, state.since, True, stamp)
            changes.append((name, "tainted"))
        elif not bad and state.tainted and held >= clear_after:
            state = TaintState(False, state.since, False, "")
            changes.append((name, "cleared"))
        out[name] = state
    return out, changes


def taint(time_added: str) -> dict[str, str]:
    """Our taint, as a slice device carries it."""
    return {"key": TAINT_KEY, "effect": TAINT_EFFECT, "timeAdded": time_added}


def with_taints(
    devices: Sequence[Mapping[str, Any]], states: Mapping[str, TaintState], supported: bool
) -> list[dict[str, Any]]:
    """The devices (internal form) with our taint on each tainted one; where taints are not
    ``supported``, the tainted devices are left out instead."""
    out = []
    for d in devices:
        state = states.get(str(d["name"]))
        if state is None or not state.tainted:
            out.append(dict(d))
        elif supported:
            out.append({**d, "taints": [taint(state.time_added)]})
    return out


def max_devices(devices: Sequence[Mapping[str, Any]]) -> int:
    """How many devices one slice of ``devices`` may hold."""
    return MAX_DEVICES_WITH_TAINTS if any(d.get("taints") for d in devices) else MAX_DEVICES


def taints_by_device(slice_obj: Mapping[str, Any]) -> dict[str, Any]:
    """Device name -> its taints (None without), in any version's shape."""
    out = {}
    for d in (slice_obj.get("spec") or {}).get("devices") or []:
        fields = d.get("basic") if isinstance(d.get("basic"), Mapping) else d  # v1beta1 wraps them
        out[str(d.get("name"))] = fields.get("taints")
    return out


def taints_dropped(sent: Mapping[str, Any], returned: Mapping[str, Any]) -> bool:
    """Whether the slice the API server returned lost any device taint ``sent`` carried."""
    got = taints_by_device(returned)
    return any(t and not got.get(name) for name, t in taints_by_device(sent).items())
