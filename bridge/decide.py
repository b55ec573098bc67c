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
  is to publish or keep publishing;
- a restart resumes (docs/design.md D43): the first decision after a start, with a publishing
  record for the inventory recorded now (:attr:`Observation.publishing_since`), starts from the
  memory of an agent that published (the settle period has passed, a blip keeps the slices);
- one publisher in a surge rollout (docs/design.md D44, with ``--pod-uid``): by
  :func:`bridge.owner_record.ownership`, an instance that the owner record does not name either
  ``take_over`` (it is the newest: it writes the record, then acts) or stands by (``standby``:
  it decides as ever, for Prepare's gate, and writes no slice).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from dra_bridge.bridge.interlocks import INTERLOCKS, Refusal, alarm, alarmed_devices
from dra_bridge.bridge.observation import Memory, Observation
from dra_bridge.bridge.owner_record import ownership
from dra_bridge.bridge.ports import PrepareGate
from dra_bridge.translate.inventory.allocatable import DeviceId

Action = Literal["publish", "withdraw", "keep", "standby"]
NOT_DRA = "the node is not in DRA mode (dra-bridge.io/mode=dra)"


@dataclass(frozen=True)
class Decision:
    """What to do: ``action``, every refusal, the alarm's text and the devices it names, the
    gate for Prepare, and the memory for the next tick. ``reported``: False when nothing new
    was decided (the Node could not be read), so the refusals are not reported again.
    ``take_over``: this instance is to write the owner record before it acts; ``resumed``: the
    settle period was skipped on a publishing record."""

    action: Action
    refusals: tuple[Refusal, ...] = ()
    alarm: str | None = None
    alarmed: Mapping[DeviceId, str] = field(default_factory=dict)
    gate: PrepareGate = field(default_factory=PrepareGate)
    memory: Memory = field(default_factory=Memory)
    reported: bool = True
    take_over: bool = False
    resumed: bool = False

    @property
    def publish(self) -> bool:
        """True when this instance is to publish the slices (now or kept)."""
        return self.action != "standby" and self.memory.publishing


def _unknown(obs: Observation) -> bool:
    """Whether a refusal rests on a dependency that did not answer."""
    return obs.offered is None or obs.held is None or obs.other_slices is None


def resume(obs: Observation, memory: Memory) -> Memory:
    """The memory the first decision after a start begins from: an agent's that published
    through the settle period when a publishing record for this inventory is on disk, else
    ``memory`` as it is."""
    if memory.decided or obs.publishing_since is None:
        return memory
    return Memory(obs.now - obs.settle_seconds, True, False)


def decide(obs: Observation, memory: Memory) -> Decision:
    """This tick's decision (see the module docstring)."""
    start = resume(obs, memory)
    decision = _decide(obs, start)
    if start is not memory and decision.action == "publish":
        decision = replace(decision, resumed=True)
    if obs.instance is None:
        return decision
    part = ownership(obs.owner, obs.instance)
    if part == "standby":
        return replace(decision, action="standby")
    return replace(decision, take_over=part == "take-over")


def _decide(obs: Observation, memory: Memory) -> Decision:
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
