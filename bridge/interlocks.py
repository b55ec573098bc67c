"""Pure decisions: may this node's recorded inventory be published for DRA? (docs/design.md D6)

One allocator per node. The kubelet hands device-plugin devices out on its own and nothing it
offers can reserve a device for DRA, so the bridge publishes only when every interlock holds:

=================  =========================================================================
interlock          holds when
=================  =========================================================================
``inventory``      something was recorded while the node was legacy
``plugin-socket``  no device-plugin socket of a recorded resource is in ``device-plugins/``
                   (the catalog's socket name for the resource, whatever its suffix: AMD's
                   is ``amd.com_gpu``; NVIDIA: ``nvidia-<name after nvidia.com/>.sock``,
                   ``getPluginSocketPath`` in NVIDIA/k8s-device-plugin
                   ``internal/plugin/server.go``; other vendors: any ``.sock`` whose name contains the
                   resource's short name: a conservative guess, since sockets do not say
                   what they serve)
``node-capacity``  the Node's capacity and allocatable for every recorded resource are 0 or
                   absent (the kubelet keeps a departed plugin's capacity for 5 minutes)
``kubelet-offers`` ``GetAllocatableResources`` offers none of the recorded device IDs (an
                   alarm only when it offers one the bridge publishes or a prepared claim
                   holds: the plugin came back; before the hand-over it is just a refusal)
``devices-held``   no container holds a recorded device (PodResources ``List``; an alarm
                   when the device is one a prepared claim holds)
``other-driver``   no other driver's slice for this node lists a recorded UUID
``settle``         all of the above held continuously for the settle period
=================  =========================================================================

:func:`alarm` is the hazard itself, apart from the refusals: a device the bridge publishes or a
prepared claim holds that the kubelet offers again, or that a legacy container holds.

"Offers none right now" alone proves nothing (a restarting kubelet offers nothing for a
while), hence the socket, capacity and settle interlocks. :func:`evaluate` takes an
:class:`Observation` and returns a :class:`Decision` naming every interlock that refused and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from dra_bridge.bridge.state import Inventory
from dra_bridge.translate.inventory.allocatable import split_replica
from dra_bridge.translate.names import NVIDIA_RESOURCE_DOMAIN

INTERLOCKS: tuple[str, ...] = (
    "inventory",
    "plugin-socket",
    "node-capacity",
    "kubelet-offers",
    "devices-held",
    "other-driver",
    "settle",
)


@dataclass(frozen=True)
class Observation:
    """What the agent saw on one tick. ``now`` is in seconds (any monotonic clock)."""

    now: float
    plugin_sockets: frozenset[str] = frozenset()
    node_capacity: Mapping[str, str] = field(default_factory=dict)
    node_allocatable: Mapping[str, str] = field(default_factory=dict)
    offered: frozenset[str] = frozenset()
    held: Mapping[str, list[str]] = field(default_factory=dict)
    other_driver_uuids: Mapping[str, str] = field(default_factory=dict)
    published: frozenset[str] = frozenset()
    """Kubelet device IDs the bridge publishes now (its slices' ``deviceID`` attributes)."""
    prepared: frozenset[str] = frozenset()
    """Kubelet device IDs that prepared claims hold (the DRA plugin's checkpoint)."""


@dataclass(frozen=True)
class Refusal:
    """One interlock that does not hold, and why (a sentence for logs, Events and readiness)."""

    interlock: str
    reason: str


@dataclass(frozen=True)
class Decision:
    """The outcome: publish or not, every refusal, and when the interlocks first all held
    (``clear_since``; None while one of them does not). ``alarm`` is :func:`alarm`'s text."""

    publish: bool
    refusals: tuple[Refusal, ...]
    clear_since: float | None
    alarm: str | None = None


def socket_serves(resource_name: str, socket_name: str, catalogued: str = "") -> bool:
    """Whether a file in ``device-plugins/`` may be the socket of the plugin of a resource:
    ``catalogued`` (the catalog's socket name for it, any suffix), or by the naming rules in
    the module table (``.sock`` names only)."""
    if catalogued and socket_name == catalogued:
        return True
    if socket_name in ("kubelet.sock",) or not socket_name.endswith(".sock"):
        return False
    vendor, _, short = resource_name.partition("/")
    if vendor == NVIDIA_RESOURCE_DOMAIN:
        return socket_name == f"nvidia-{short}.sock"
    stem = socket_name[: -len(".sock")].lower()
    tokens = {t for t in re.split(r"[^a-z0-9]+", short.lower()) if len(t) >= 3}
    return any(t in stem for t in tokens) or vendor.split(".")[0].lower() in stem


def _quantity_is_zero(value: str | None) -> bool:
    return value is None or value.strip() in ("", "0")


def _clashes(
    offered: frozenset[str], held: Mapping[str, list[str]], published: frozenset[str], prepared: frozenset[str]
) -> tuple[list[str], list[str]]:
    """(devices offered again, prepared devices held by legacy containers), each sorted."""
    return sorted(offered & (published | prepared)), sorted(d for d in prepared if held.get(d))


def alarmed_devices(
    offered: frozenset[str], held: Mapping[str, list[str]], published: frozenset[str], prepared: frozenset[str]
) -> dict[str, str]:
    """The devices :func:`alarm` names, each with its reason (device health, bridge.kubeletplugin.device_health)."""
    again, both = _clashes(offered, held, published, prepared)
    out = dict.fromkeys(again, "the kubelet offers it again (a device plugin serves it)")
    for d in both:
        reason = f"assigned to legacy container(s) {', '.join(sorted(held[d])[:5])} while a prepared claim holds it"
        out[d] = f"{out[d]}; {reason}" if d in out else reason
    return out


def alarm(
    offered: frozenset[str], held: Mapping[str, list[str]], published: frozenset[str], prepared: frozenset[str]
) -> str | None:
    """Why two allocators may hand out one device, or None: the kubelet offers a device the
    bridge publishes or a prepared claim holds, or a legacy container holds a prepared claim's
    device. Offered devices that neither publishes nor holds are no alarm (labelling the node
    before turning the device plugin off is the usual order, and then only a refusal)."""
    problems = []
    again, both = _clashes(offered, held, published, prepared)
    if again:
        problems.append(
            f"the kubelet offers device(s) again that the bridge publishes or a prepared claim "
            f"holds: {', '.join(again[:5])}"
        )
    if both:
        holders = sorted({h for d in both for h in held[d]})
        problems.append(
            f"device(s) of prepared claims assigned to legacy container(s): {', '.join(both[:5])} "
            f"({', '.join(holders[:5])})"
        )
    return "; ".join(problems) or None


def evaluate(
    recorded: Inventory,
    obs: Observation,
    clear_since: float | None,
    settle_seconds: float,
    catalogued_sockets: Mapping[str, str] | None = None,
) -> Decision:
    """Decide whether to publish ``recorded`` given ``obs`` (pure; see the module table).
    ``catalogued_sockets``: resource name -> its plugin's socket file name from the catalog."""
    known = catalogued_sockets or {}
    refusals: list[Refusal] = []
    if recorded.empty:
        refusals.append(Refusal("inventory", "no device-plugin inventory was recorded while the node was legacy"))
    resources = sorted(recorded.resources())
    sockets = sorted(s for s in obs.plugin_sockets if any(socket_serves(r, s, known.get(r, "")) for r in resources))
    if sockets:
        refusals.append(Refusal("plugin-socket", f"device plugin socket(s) still present: {', '.join(sockets)}"))
    nonzero = [
        f"{r}={obs.node_capacity.get(r) or obs.node_allocatable.get(r)}"
        for r in resources
        if not (_quantity_is_zero(obs.node_capacity.get(r)) and _quantity_is_zero(obs.node_allocatable.get(r)))
    ]
    if nonzero:
        refusals.append(Refusal("node-capacity", f"node still reports device-plugin capacity: {', '.join(nonzero)}"))
    offered = sorted(recorded.device_ids() & obs.offered)
    if offered:
        refusals.append(Refusal("kubelet-offers", f"the kubelet offers recorded device(s): {', '.join(offered[:5])}"))
    held = sorted(d for d in recorded.device_ids() if obs.held.get(d))
    if held:
        holders = sorted({h for d in held for h in obs.held[d]})
        text = f"{len(held)} device(s) held by container(s): {', '.join(holders[:5])}"
        refusals.append(Refusal("devices-held", text))
    uuids = {split_replica(d)[0] for d in recorded.device_ids()}
    clash = sorted(u for u in uuids if u in obs.other_driver_uuids)
    if clash:
        where = sorted({obs.other_driver_uuids[u] for u in clash})
        refusals.append(Refusal("other-driver", f"UUID(s) {', '.join(clash[:5])} listed by {', '.join(where)}"))
    raised = alarm(obs.offered, obs.held, obs.published, obs.prepared)
    if refusals:
        return Decision(False, tuple(refusals), None, raised)
    since = obs.now if clear_since is None else clear_since
    waited = obs.now - since
    if waited < settle_seconds:
        return Decision(
            False, (Refusal("settle", f"interlocks hold for {waited:.0f}s of {settle_seconds:.0f}s"),), since, raised
        )
    return Decision(True, (), since, raised)
