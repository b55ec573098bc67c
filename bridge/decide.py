"""The decision step of a tick (pure): an :class:`bridge.observation.Observation` and the
previous :class:`bridge.observation.Memory` in, a :class:`Decision` out. No sockets, no clock,
no API server: tested from tables of observations.

- the Node could not be read: ``keep`` everything as it is (nothing is reported anew);
- ``legacy``: ``withdraw``; the alarm only for prepared claims (after a rollback);
- ``dra``: every interlock of :data:`bridge.interlocks.INTERLOCKS` (``settle`` only once the
  others hold) -> ``publish`` when none refuses; a refusal that rests on a dependency that did
  not answer (PodResources, the slice list) while publishing -> ``keep`` (a kubelet blip neither
  withdraws nor restarts the settle period); else ``withdraw``;
- the alarm (:func:`bridge.interlocks.alarm`) in both modes;
- the gate Prepare reads (:class:`bridge.ports.PrepareGate`): fresh claims only while the decision
  is to publish or keep publishing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from dra_bridge.bridge.interlocks import INTERLOCKS, Refusal, alarm, alarmed_devices
from dra_bridge.bridge.observation import Memory, Observation
from dra_bridge.bridge.ports import PrepareGate
from dra_bridge.translate.inventory.allocatable import DeviceId

Action = Literal["publish", "withdraw", "keep"]
NOT_DRA = "the node is not in DRA mode (dra-bridge.io/mode=dra)"


@dataclass(frozen=True)
class Decision:
    """What to do: ``action``, every refusal, the alarm's text and the devices it names, the
    gate for Prepare, and the memory for the next tick. ``reported``: False when nothing new
    was decided (the Node could not be read), so the refusals are not reported again."""

    action: Action
    refusals: tuple[Refusal, ...] = ()
    alarm: str | None = None
    alarmed: Mapping[DeviceId, str] = field(default_factory=dict)
    gate: PrepareGate = field(default_factory=PrepareGate)
    memory: Memory = field(default_factory=Memory)
    reported: bool = True

    @property
    def publish(self) -> bool:
        """True when the slices are to be published (now or kept)."""
        return self.memory.publishing


def _unknown(obs: Observation) -> bool:
    """Whether a refusal rests on a dependency that did not answer."""
    return obs.offered is None or obs.held is None or obs.other_slices is None


def decide(obs: Observation, memory: Memory) -> Decision:
    """This tick's decision (see the module docstring)."""
    if obs.mode is None:
        gate = PrepareGate(memory.decided, memory.publishing, "" if memory.publishing else "the Node is unreadable")
        return Decision("keep", gate=gate if memory.decided else PrepareGate(), memory=memory, reported=False)
    alarmed = alarmed_devices(obs)
    text = alarm(obs)
    if obs.mode != "dra":
        withdrawn = Memory(None, False, True)
        return Decision("withdraw", (), text, alarmed, PrepareGate(True, False, NOT_DRA), withdrawn)
    refusals = [
        Refusal(name, reason)
        for name, check in INTERLOCKS.items()
        if name != "settle" and (reason := check(obs, memory)) is not None
    ]
    if refusals:
        reason = "; ".join(f"{r.interlock}: {r.reason}" for r in refusals)
        if _unknown(obs) and memory.publishing:
            kept = Memory(memory.clear_since, True, True)
            return Decision("keep", tuple(refusals), text, alarmed, PrepareGate(True, True, ""), kept)
        withdrawn = Memory(None, False, True)
        return Decision("withdraw", tuple(refusals), text, alarmed, PrepareGate(True, False, reason), withdrawn)
    since = Memory(obs.now if memory.clear_since is None else memory.clear_since, memory.publishing, True)
    settle = INTERLOCKS["settle"](obs, since)
    if settle is not None:
        waiting = Memory(since.clear_since, False, True)
        gate = PrepareGate(True, False, f"settle: {settle}")
        return Decision("withdraw", (Refusal("settle", settle),), text, alarmed, gate, waiting)
    return Decision("publish", (), text, alarmed, PrepareGate(True, True, ""), Memory(since.clear_since, True, True))
