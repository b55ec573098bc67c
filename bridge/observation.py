"""One tick's snapshot of the node (:class:`Observation`) and what the last decision left
(:class:`Memory`): the input of the pure decision step, :func:`bridge.decide.decide`.

Plain data, no I/O: :mod:`bridge.observe` fills an :class:`Observation` from the kubelet, the
API server and the state directory; a component test writes one by hand. A value that could
not be read is None (the Node, the kubelet's answers, the other drivers' slices), never an
empty value that would read as "none". New facts (a checkpoint that cannot be read, an owner
record) are new fields with a default, so existing observations stay valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.bridge.owner_record import Instance
from dra_bridge.bridge.state import Inventory
from dra_bridge.translate.inventory.allocatable import DeviceId, InventoryDevice
from dra_bridge.translate.names import BRIDGE_DRIVER

Held = Mapping[str, list[str]]
"""Device ID -> the containers PodResources ``List`` shows it assigned to through a device plugin."""


@dataclass(frozen=True)
class Observation:
    """What the agent saw on one tick. ``now`` is in seconds (any monotonic clock)."""

    now: float
    recorded: Inventory = field(default_factory=Inventory)
    """The inventory recorded while the node was legacy (the state directory)."""
    mode: str | None = "dra"
    """``dra`` or ``legacy`` from the Node's label; None when the Node could not be read."""
    node_capacity: Mapping[str, str] = field(default_factory=dict)
    node_allocatable: Mapping[str, str] = field(default_factory=dict)
    plugin_sockets: frozenset[str] = frozenset()
    catalogued_sockets: Mapping[str, str] = field(default_factory=dict)
    """Resource name -> its device plugin's socket file name from the catalog."""
    offered: tuple[InventoryDevice, ...] | None = ()
    """What ``GetAllocatableResources`` offers (device-plugin devices); None: it did not answer."""
    held: Held | None = field(default_factory=dict)
    """PodResources ``List`` (device-plugin devices only); None: it did not answer."""
    other_slices: tuple[Mapping[str, Any], ...] | None = ()
    """Specs of other drivers' slices for this node; None: they could not be listed."""
    slices_error: str = ""
    """Why the other drivers' slices could not be listed."""
    published: frozenset[DeviceId] = frozenset()
    """The devices the bridge publishes now."""
    prepared: frozenset[DeviceId] = frozenset()
    """The devices prepared claims hold (the DRA plugin's checkpoint)."""
    checkpoint_readable: bool = True
    """Whether the DRA plugin's checkpoint could be read; False: :attr:`prepared` is unknown."""
    checkpoint_error: str = ""
    """Why the checkpoint is unreadable."""
    settle_seconds: float = 0.0
    driver: str = BRIDGE_DRIVER
    publishing_since: float | None = None
    """When publication began (unix seconds) by the publishing record in the state directory, if
    there is one for the inventory recorded now (:mod:`bridge.publishing_record`); None: none."""
    instance: Instance | None = None
    """This instance (``--pod-uid`` and its start time); None: the only one (no rolling update)."""
    owner: Instance | None = None
    """The instance the owner record names (:mod:`bridge.owner_record`); None: no readable record."""
    fresh_refusal: str = ""
    """Nothing recorded: why the fresh-node source gives no inventory either (:mod:`bridge.fresh_source`)."""

    @property
    def claimed(self) -> frozenset[DeviceId]:
        """The devices prepared claims may hold: :attr:`prepared`, or every recorded device while
        the checkpoint is unreadable (an unknown count is not zero, docs/design.md D29)."""
        if self.checkpoint_readable:
            return self.prepared
        return frozenset(DeviceId.of(d) for d in self.recorded.devices)


@dataclass(frozen=True)
class Memory:
    """What the previous decision left: when the interlocks first all held (``clear_since``),
    whether it published (or kept publishing), and whether there was one at all."""

    clear_since: float | None = None
    publishing: bool = False
    decided: bool = False
