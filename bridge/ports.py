"""The two narrow interfaces between the halves of the node agent (``.importlinter`` keeps the
halves apart: :mod:`bridge.kubeletplugin` never imports the hand-over modules, and they never
import it; ``cli`` wires one to the other).

- :class:`HandoverView`: what the kubelet plugin reads of the hand-over half, each time it needs
  it: the published devices by name, the ``resource.k8s.io`` version to read claims at, the
  last publication decision (:class:`PrepareGate`) and, for the last-line check at Prepare,
  what the kubelet's device plugins hold and offer right now (:class:`DeviceUse`).
- :class:`PluginView`: what the hand-over half reads of the plugin: the prepared-claim count (None
  while the checkpoint is unreadable: unknown, not zero, docs/design.md D29) and the devices
  prepared claims hold, whether the checkpoint is readable, whether CDI names resolve, liveness,
  device health, and each tick's collection of entries whose claim is gone (docs/design.md D30).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from dra_bridge.translate.inventory.allocatable import DeviceId


@dataclass(frozen=True)
class PrepareGate:
    """The last publication decision, as Prepare sees it: ``decided`` is False before the first
    decision after a start (Prepare then answers a retryable error); ``publishing`` is True while
    the slices are published or kept through a blip (fresh claims may be prepared only then);
    ``reason`` says why not, for the claim's error."""

    decided: bool = False
    publishing: bool = False
    reason: str = "the agent has not decided yet whether to publish (it just started)"


OPEN = PrepareGate(True, True, "")
"""A gate that lets fresh claims through (tests of the plugin alone)."""


@dataclass(frozen=True)
class DeviceUse:
    """What the kubelet's device plugins do with recorded devices right now (PodResources), each
    raw device ID mapped to the recorded devices it may be (an index ID of a returning NVIDIA
    plugin maps through the recorded inventory): ``offered``, device -> how
    ``GetAllocatableResources`` offers it (device-plugin devices only); ``held``, device -> the
    containers ``List`` shows it assigned to through a device plugin (``ContainerDevices``; our
    own DRA devices are not listed there). ``error``: why they could not be read (Prepare then
    answers a retryable error)."""

    offered: Mapping[DeviceId, str] = field(default_factory=dict)
    held: Mapping[DeviceId, Sequence[str]] = field(default_factory=dict)
    error: str = ""


class HandoverView(Protocol):
    """What the kubelet plugin reads of the hand-over half."""

    def devices(self) -> Mapping[str, DeviceId]:
        """Published device name -> the recorded device it stands for."""
        ...

    async def claim_version(self) -> str:
        """The ``resource.k8s.io`` version to read ResourceClaims at."""
        ...

    def prepare_gate(self) -> PrepareGate:
        """The last publication decision."""
        ...

    async def device_use(self) -> DeviceUse:
        """What the kubelet's device plugins offer and hold now (read fresh)."""
        ...


class PluginView(Protocol):
    """What the hand-over half reads of the kubelet plugin."""

    @property
    def prepared_count(self) -> int | None:
        """How many claims are prepared (the Node condition's number); None while the checkpoint
        is unreadable."""
        ...

    @property
    def checkpoint_readable(self) -> bool:
        """Whether the prepared-claim checkpoint could be read (False: the count is unknown)."""
        ...

    @property
    def checkpoint_error(self) -> str:
        """Why the checkpoint is unreadable; empty while it is readable."""
        ...

    def reread_checkpoint(self) -> None:
        """Read an unreadable checkpoint again (rolled forward or repaired: readable again)."""
        ...

    async def collect(self, now: float) -> list[str]:
        """Unprepare the checkpoint entries whose claim is gone (wall time ``now``); the labels of
        the claims collected."""
        ...

    def prepared_devices(self) -> frozenset[DeviceId]:
        """The devices prepared claims hold (the alarm's input)."""
        ...

    def unhealthy_devices(self) -> frozenset[str]:
        """The published device names the health rule last found UNHEALTHY (the taint's input)."""
        ...

    def resolves(self, cdi_ids: Sequence[str]) -> Mapping[str, bool]:
        """Whether each fully-qualified CDI name resolves in the node's CDI specs now."""
        ...

    def report_health(self, alarmed: Mapping[str, str]) -> None:
        """Hand the kubelet's health stream this tick's alarm (kubelet device ID -> reason)."""
        ...

    async def alive(self) -> str:
        """Empty when the plugin's sockets answer, else why not (liveness)."""
        ...


@dataclass
class StaticView:
    """A :class:`HandoverView` over fixed values (tests of the plugin alone, benchmarks)."""

    index: Mapping[str, DeviceId]
    version: str = "resource.k8s.io/v1"
    gate: PrepareGate = OPEN
    use: DeviceUse = field(default_factory=DeviceUse)

    def devices(self) -> Mapping[str, DeviceId]:
        return self.index

    async def claim_version(self) -> str:
        return self.version

    def prepare_gate(self) -> PrepareGate:
        return self.gate

    async def device_use(self) -> DeviceUse:
        return self.use
