"""Start and stop the DRA kubelet plugin: the DRA service first, then the registration socket.

    plugin = await start_plugin(PluginPaths.under(kubelet_dir, state_dir), api, node, view, metrics=...)
                                         view: what it reads of the hand-over half (bridge.ports.HandoverView)
    plugin.prepared_count                the prepared-claim count (the Node condition's number;
                                         None while the checkpoint is unreadable)
    plugin.checkpoint_readable           False while the checkpoint is unreadable (checkpoint_error: why)
    plugin.reread_checkpoint()           read the checkpoint again (each tick) while unreadable, and
                                         always with a pod UID (another instance may have written it)
    plugin.collection = Collection(kubelet, grace)   what collection reads (unset: none)
    await plugin.collect(now)            unprepare entries whose claim is gone (claim_collector)
    plugin.prepared_devices()            the devices prepared claims hold (the alarm's input)
    await plugin.alive()                 "" when both sockets answer, else why not (liveness)
    plugin.report_health(alarmed)        assess the devices for the kubelet's health stream
    await plugin.stop()

Paths (the Go helper's defaults, ``KubeletPluginsDir`` and ``KubeletRegistryDir`` in
https://github.com/kubernetes/dynamic-resource-allocation/blob/master/kubeletplugin/draplugin.go): the DRA service on
``<kubelet dir>/plugins/<driver>/dra.sock``, registration on
``<kubelet dir>/plugins_registry/<driver>-reg.sock``, our CDI specs in the last CDI directory
(``--cdi-dir``; default ``/etc/cdi,/var/run/cdi``, so ``/var/run/cdi``), the checkpoint in the
state directory. :class:`Plugin` is the hand-over half's :class:`bridge.ports.PluginView`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import grpc

from dra_bridge.bridge.drm_sysfs import read_drm, sysfs_root
from dra_bridge.bridge.file_lock import LOCK_FILE, file_lock
from dra_bridge.bridge.health import Metrics
from dra_bridge.bridge.kubeletapi import dra_v1_pb2, dra_v1_pb2_grpc, registration_pb2, registration_pb2_grpc
from dra_bridge.bridge.kubeletplugin.cdi_specs import CDI_DIRS, SpecIndex
from dra_bridge.bridge.kubeletplugin.checkpoint import CheckpointStore, read_boot_id
from dra_bridge.bridge.kubeletplugin.claim_collector import ClaimCollector
from dra_bridge.bridge.kubeletplugin.claims import ClaimPreparer
from dra_bridge.bridge.kubeletplugin.device_health import UNHEALTHY, HealthFacts, assess, nvml_uuids, toolkit_ids
from dra_bridge.bridge.kubeletplugin.health_stream import HealthStream
from dra_bridge.bridge.kubeletplugin.plugin import serve_dra
from dra_bridge.bridge.kubeletplugin.registration import Registration, serve_registration
from dra_bridge.bridge.podresources.client import PodResourcesClient
from dra_bridge.bridge.ports import HandoverView
from dra_bridge.bridge.settings import Settings
from dra_bridge.kube.api import KubeApi
from dra_bridge.translate.cdi import EditsLookup
from dra_bridge.translate.inventory.allocatable import DeviceId
from dra_bridge.translate.names import BRIDGE_DRIVER

PROBE_TIMEOUT = 2.0
"""Seconds a liveness dial of one socket may take."""
NvmlCheck = Callable[[Iterable[str]], "Mapping[str, str] | None"]
"""UUIDs -> {UUID: "" when NVML finds it, else why not}, None without NVML (:func:`bridge.nvml.check_uuids`)."""


UNHEALTHY_FILE_ENV = "DRA_BRIDGE_TEST_UNHEALTHY_FILE"


def marked_unhealthy() -> dict[str, str]:
    """Device IDs listed (one a line) in the file ``DRA_BRIDGE_TEST_UNHEALTHY_FILE`` names, as if the
    alarm named them: a test hook (real-node tests have no failing GPU), inert unless set."""
    path = os.environ.get(UNHEALTHY_FILE_ENV)
    if not path:
        return {}
    try:
        lines = Path(path).read_text("utf-8").split()
    except OSError:
        return {}
    return dict.fromkeys(lines, "marked unhealthy by the test hook")


@dataclass(frozen=True)
class PluginPaths:
    """Where the plugin's sockets, specs and checkpoint live."""

    registry_dir: Path
    plugin_dir: Path
    cdi_dirs: tuple[Path, ...]
    state_dir: Path
    driver: str = BRIDGE_DRIVER
    pod_uid: str = ""
    """The agent pod's UID (``--pod-uid``): part of both socket names when set (rolling updates)."""
    sysfs: Path = field(default_factory=sysfs_root)
    """Where the host's sysfs is (DRM nodes by PCI address, :mod:`bridge.drm_sysfs`); tests give their own."""

    @classmethod
    def under(
        cls,
        kubelet_dir: str | Path,
        state_dir: str | Path,
        cdi_dirs: Sequence[str | Path] = CDI_DIRS,
        driver: str = BRIDGE_DRIVER,
    ) -> PluginPaths:
        """The kubelet's layout under ``kubelet_dir``."""
        k = Path(kubelet_dir)
        return cls(
            k / "plugins_registry", k / "plugins" / driver, tuple(Path(d) for d in cdi_dirs), Path(state_dir), driver
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> PluginPaths:
        """The layout ``dra-bridge run`` uses: ``--kubelet-dir``, ``--state-dir``, ``--cdi-dir``."""
        return replace(cls.under(settings.kubelet_dir, settings.state_dir, settings.cdi_dirs), pod_uid=settings.pod_uid)

    @property
    def spec_dir(self) -> Path:
        """Where our per-claim CDI specs go: the last (highest-priority) CDI directory."""
        return self.cdi_dirs[-1]

    @property
    def dra_socket(self) -> Path:
        """``<plugin dir>/dra.sock``; ``dra-<pod UID>.sock`` with a pod UID (the Go helper's
        ``RollingUpdate`` names, kubeletplugin/draplugin.go)."""
        return self.plugin_dir / (f"dra-{self.pod_uid}.sock" if self.pod_uid else "dra.sock")

    @property
    def registration_socket(self) -> Path:
        """``<registry dir>/<driver>-reg.sock``; ``<driver>-<pod UID>-reg.sock`` with a pod UID."""
        instance = f"-{self.pod_uid}" if self.pod_uid else ""
        return self.registry_dir / f"{self.driver}{instance}-reg.sock"


DEFAULT_GRACE = 600.0
"""``--claim-grace-period``'s default (seconds)."""


@dataclass(frozen=True)
class Collection:
    """What collecting checkpoint entries whose claim is gone reads: the kubelet's PodResources
    API (``List``) and the grace period (``--claim-grace-period``, seconds)."""

    kubelet: PodResourcesClient
    grace: float = DEFAULT_GRACE


@dataclass
class Plugin:
    """The running plugin: its preparer, registration servicer and servers (a
    :class:`bridge.ports.PluginView`)."""

    paths: PluginPaths
    preparer: ClaimPreparer
    registration: Registration
    servers: list[grpc.aio.Server] = field(default_factory=list)
    health: HealthStream = field(default_factory=HealthStream)
    """The device health stream the kubelet watches (:mod:`bridge.kubeletplugin.health_stream`)."""
    pool: str = ""
    """Our pool: the node name."""
    nvml_check: NvmlCheck | None = None
    """:func:`bridge.nvml.check_uuids` where NVML may be present (None: no NVML facts)."""
    collection: Collection | None = None
    """What collection reads (``dra-bridge run`` sets it); None: nothing is collected."""
    collector: ClaimCollector = field(default_factory=lambda: ClaimCollector(DEFAULT_GRACE))
    """Collects entries whose claim is gone (:mod:`bridge.kubeletplugin.claim_collector`)."""

    @property
    def prepared_count(self) -> int | None:
        """How many claims are prepared; None while the checkpoint is unreadable (unknown, not zero)."""
        return None if self.preparer.broken else self.preparer.count

    @property
    def checkpoint_readable(self) -> bool:
        """Whether the prepared-claim checkpoint could be read."""
        return not self.preparer.broken

    @property
    def checkpoint_error(self) -> str:
        """Why the checkpoint is unreadable; empty while it is readable."""
        return self.preparer.broken

    def reread_checkpoint(self) -> None:
        """Read the checkpoint again while it is unreadable (rolled forward or repaired), and on
        every call with a pod UID: two instances may overlap, and the one the kubelet does not
        call reports the count on disk, not the one in its memory (docs/design.md D44). Writes
        are atomic renames, so the file read is the old or the new checkpoint."""
        if self.preparer.broken or self.paths.pod_uid:
            self.preparer.reload()

    async def collect(self, now: float) -> list[str]:
        """Unprepare entries whose claim is gone (:meth:`ClaimCollector.tick`); the labels collected."""
        if self.collection is None:
            return []
        self.collector.grace = self.collection.grace
        # instances overlap only with a pod UID: then collection takes the rolling-update lock
        self.collector.lock = self.paths.state_dir / LOCK_FILE if self.paths.pod_uid else None
        preparer = self.preparer
        return await self.collector.tick(
            preparer, self.collection.kubelet, preparer.api, preparer.view.claim_version, now
        )

    def prepared_devices(self) -> frozenset[DeviceId]:
        """The devices prepared claims hold."""
        return self.preparer.devices()

    def unhealthy_devices(self) -> frozenset[str]:
        """The published device names the last health assessment found UNHEALTHY."""
        return frozenset(r.device for r in self.health.reports if r.health == UNHEALTHY)

    def resolves(self, cdi_ids: Sequence[str]) -> Mapping[str, bool]:
        """Whether each CDI name resolves in the node's CDI specs now."""
        return self.preparer.index.resolves(cdi_ids)

    def report_health(self, alarmed: Mapping[str, str]) -> None:
        """Assess every recorded device (:mod:`bridge.kubeletplugin.device_health`) from NVML (:attr:`nvml_check`),
        the hand-over alarm's ``alarmed`` (kubelet device ID -> reason) and whether each toolkit CDI
        device resolves now, and hand the assessment to the kubelet's health stream."""
        inventory = self.preparer.view.devices()
        nvml = self.nvml_check(nvml_uuids(inventory)) if self.nvml_check is not None else None
        resolves = self.preparer.index.resolves(toolkit_ids(inventory))
        alarmed = {**alarmed, **marked_unhealthy()}
        self.health.update(assess(inventory, self.pool, HealthFacts(nvml, alarmed, resolves)))

    async def alive(self) -> str:
        """Empty when both sockets answer a call (registration ``GetInfo``; an empty
        ``NodePrepareResources`` through the v1 service), else the reason."""
        try:
            async with grpc.aio.insecure_channel(f"unix://{self.paths.registration_socket}") as ch:
                registration = registration_pb2_grpc.RegistrationStub(ch)
                await registration.GetInfo(registration_pb2.InfoRequest(), timeout=PROBE_TIMEOUT)
        except grpc.RpcError as exc:
            return f"registration socket {self.paths.registration_socket}: {exc.code().name}"
        try:
            async with grpc.aio.insecure_channel(f"unix://{self.paths.dra_socket}") as ch:
                dra = dra_v1_pb2_grpc.DRAPluginStub(ch)
                await dra.NodePrepareResources(dra_v1_pb2.NodePrepareResourcesRequest(), timeout=PROBE_TIMEOUT)
        except grpc.RpcError as exc:
            return f"DRA socket {self.paths.dra_socket}: {exc.code().name}"
        return ""

    async def stop(self) -> None:
        """Stop serving and remove our own two sockets, never another instance's (the kubelet then
        deregisters this one)."""
        for server in reversed(self.servers):
            await server.stop(None)
        self.paths.registration_socket.unlink(missing_ok=True)
        self.paths.dra_socket.unlink(missing_ok=True)


async def start_plugin(
    paths: PluginPaths,
    api: KubeApi,
    node: str,
    view: HandoverView,
    metrics: Metrics | None = None,
    boot_id: Callable[[], str] = read_boot_id,
    edits: EditsLookup | None = None,
    nvml_check: NvmlCheck | None = None,
) -> Plugin:
    """Recover from the checkpoint (with a pod UID under the file lock, which every checkpoint and
    CDI write of another instance holds), serve the DRA service and the health stream, then register (in
    that order). ``view``: what the plugin reads of the hand-over half (:class:`bridge.ports.HandoverView`);
    ``edits``: a device's recorded Allocate edits or static recipe
    (:func:`translate.edit_sources.lookup`; default: the shipped catalog's recipes); ``nvml_check``:
    :func:`bridge.nvml.check_uuids` where NVML may be present. Collection starts once the caller
    sets :attr:`Plugin.collection`."""
    preparer = ClaimPreparer(
        api,
        node,
        CheckpointStore(paths.state_dir, boot_id),
        paths.spec_dir,
        SpecIndex(paths.cdi_dirs),
        view,
        paths.driver,
        edits,
    )
    preparer.drm = lambda: read_drm(paths.sysfs)
    lock = paths.state_dir / LOCK_FILE if paths.pod_uid else None  # instances overlap only with a pod UID
    if lock is None:
        preparer.recover()
    else:  # under the lock: never another instance's spec written just before its checkpoint entry
        async with file_lock(lock):
            preparer.recover()
    health = HealthStream()
    dra = await serve_dra(paths.dra_socket, preparer, metrics, health, lock)
    registration_server, registration = await serve_registration(
        paths.registration_socket, paths.driver, paths.dra_socket
    )
    plugin = Plugin(paths, preparer, registration, [dra, registration_server], health, node, nvml_check)
    plugin.report_health({})
    return plugin
