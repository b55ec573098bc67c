"""Agent settings: a frozen dataclass built only by :meth:`Settings.from_args` / :meth:`Settings.from_env`.

Every flag has an environment twin ``DRA_BRIDGE_<NAME>`` (docs/design.md D14, the kube.flags
convention); a flag given on the command line wins over its environment variable, which wins
over the default. The former unprefixed twins (``NODE_NAME``, ``CATALOG``, ``LOG_LEVEL``, ...)
are still read, with a deprecation warning. These constructors are the only places that read
the environment; the flags' help texts are the table :data:`FLAGS`.

``--driver-name`` (``DRA_BRIDGE_DRIVER_NAME``, ``DRIVER_NAME``) was removed: the driver name is
part of the DeviceClasses' contract (they select ``device.driver == "dra-bridge.io"``, the
shipped catalog's ``bridgeDriver``), so a bridge publishing under another name would leave every
converted claim unallocatable. Setting it to another name in any form is a
:class:`SettingsError` naming it, never silently ignored (:data:`REMOVED`); setting it to
``dra-bridge.io`` itself (what a DaemonSet written for an older release may carry) only logs a
warning naming it, since it changes nothing.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from dra_bridge.bridge.errors import SettingsError
from dra_bridge.kube.flags import BRIDGE_PREFIX, Flag, FlagTable, FlagValueError, seconds
from dra_bridge.kube.logs import level_number
from dra_bridge.translate.dns_names import is_dns_subdomain
from dra_bridge.translate.errors import ApiVersionError
from dra_bridge.translate.names import BRIDGE_DRIVER, normalize_api_version

logger = logging.getLogger(__name__)

POD_UID = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
"""What ``--pod-uid`` accepts: a pod UID (an RFC 4122 UUID) or any DNS label, safe in a file name."""


@dataclass(frozen=True)
class Settings:
    """The agent's configuration (the flags' help texts are :data:`FLAGS`)."""

    node_name: str = ""
    """The Node this agent serves; required for ``run``."""
    kubelet_dir: str = "/var/lib/kubelet"
    """The kubelet root directory."""
    state_dir: str = "/var/lib/dra-bridge"
    """Directory of the node-local inventory state."""
    catalog: str = ""
    """User catalog file extending the shipped one; empty for none."""
    poll_interval: float = 30.0
    """Seconds between inventory polls and slice resyncs."""
    settle_period: float = 120.0
    """Seconds every interlock must hold before publishing starts."""
    kubeconfig: str = ""
    """Kubeconfig file; empty: the in-cluster service account."""
    resource_api_version: str = ""
    """The resource.k8s.io version to write; empty: discovered."""
    health_port: int = 8081
    """Port of the probe and metrics endpoints; 0: none."""
    log_level: str = "INFO"
    """Log level."""
    pod_uid: str = ""
    """This agent pod's UID (downward API ``metadata.uid``); when set, the plugin's sockets carry it
    (``<driver>-<uid>-reg.sock``, ``dra-<uid>.sock``) so two agents of one node can overlap during a
    DaemonSet rolling update with ``maxSurge`` (kubelets 1.33+); empty: the fixed names."""
    unhealthy_taint_after: float = 60.0
    """Seconds a device must be unhealthy before its slice device gets the ``dra-bridge.io/unhealthy``
    NoSchedule taint (:mod:`translate.inventory.device_taints`)."""
    healthy_untaint_after: float = 300.0
    """Seconds a tainted device must be healthy again before the taint is removed."""
    claim_grace_period: float = 600.0
    """Seconds a checkpointed claim must be gone from the API server (and unused on the node)
    before its entry is unprepared and removed (:mod:`bridge.kubeletplugin.checkpoint_gc`)."""
    cdi_dir: str = "/etc/cdi,/var/run/cdi"
    """The CDI spec directories the container runtime reads (containerd's ``cdi_spec_dirs``), comma
    separated, in increasing priority; our per-claim specs go to the last (:attr:`cdi_dirs`)."""

    nvml_driver_root: str = ""
    """Where the host's NVIDIA driver root is mounted; NVML's library is loaded from under it
    (:func:`bridge.nvml.load_library`). Empty: from the image's library path."""

    @property
    def cdi_dirs(self) -> tuple[str, ...]:
        """``cdi_dir`` split at commas, blanks and a trailing ``/`` dropped (validated by :meth:`validate`)."""
        return tuple(d if d == "/" else d.rstrip("/") for d in (part.strip() for part in self.cdi_dir.split(",")))

    def validate(self, need_node: bool = True) -> Settings:
        """The settings (resource_api_version in its full form), or SettingsError naming the
        flag and its environment twin."""
        twin = FLAGS.twin
        if need_node and not is_dns_subdomain(self.node_name):
            raise SettingsError(f"{twin('node_name')} must be a node name, got {self.node_name!r}")
        try:  # finite: nan passes any comparison's negation, inf never elapses
            seconds(self.poll_interval, twin("poll_interval"))
            seconds(self.settle_period, twin("settle_period"), zero=True)
            seconds(self.unhealthy_taint_after, twin("unhealthy_taint_after"), zero=True)
            seconds(self.healthy_untaint_after, twin("healthy_untaint_after"), zero=True)
            seconds(self.claim_grace_period, twin("claim_grace_period"), zero=True)
        except FlagValueError as exc:
            raise SettingsError(str(exc)) from None
        if ":" in self.kubeconfig and not Path(self.kubeconfig).exists():
            raise SettingsError(
                f"{twin('kubeconfig')}: one file, not a colon-separated list ({self.kubeconfig!r}); "
                "kubectl's KUBECONFIG lists are not read"
            )
        version = self.resource_api_version
        if version:
            try:
                version = normalize_api_version(version)
            except ApiVersionError:
                raise SettingsError(
                    f"{twin('resource_api_version')} must be v1, v1beta2 or v1beta1 "
                    f"(resource.k8s.io/ prefix optional), got {self.resource_api_version!r}"
                ) from None
        if not 0 <= self.health_port <= 65535:
            raise SettingsError(
                f"{twin('health_port')} must be a port number (1-65535) or 0 for none, got {self.health_port}"
            )
        dirs = self.cdi_dirs
        if not all(d.startswith("/") for d in dirs) or len(set(dirs)) != len(dirs):
            raise SettingsError(
                f"{twin('cdi_dir')} must list absolute directories, comma separated and each once "
                f"(the container runtime's CDI spec directories), got {self.cdi_dir!r}"
            )
        if self.nvml_driver_root and not self.nvml_driver_root.startswith("/"):
            raise SettingsError(
                f"{twin('nvml_driver_root')} must be an absolute directory (where the host's NVIDIA "
                f"driver root is mounted), got {self.nvml_driver_root!r}"
            )
        if self.pod_uid and not POD_UID.fullmatch(self.pod_uid):
            raise SettingsError(
                f"{twin('pod_uid')} must be the pod's UID (lower-case letters, digits and '-', at "
                f"most 63; the downward API's metadata.uid), got {self.pod_uid!r}"
            )
        try:
            level_number(self.log_level)
        except ValueError as exc:
            raise SettingsError(f"{twin('log_level')} {exc}") from None
        return replace(self, resource_api_version=version)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from environment variables only (unset ones keep their defaults)."""
        return cls.from_args([], env)

    @classmethod
    def from_args(cls, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Settings:
        """Settings from flags, falling back to environment twins, then defaults."""
        parser = build_parser(argparse.ArgumentParser(add_help=False))
        args, _ = parser.parse_known_args(list(argv))
        return cls.from_namespace(args, env)

    @classmethod
    def from_namespace(cls, args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from parsed flags (``None`` = not given) and environment twins; SettingsError
        when a removed setting is given (:data:`REMOVED`)."""
        env = os.environ if env is None else env
        for name, (why, harmless) in REMOVED.items():
            flag = getattr(args, name, None)
            given = [(f"--{name.replace('_', '-')}", str(flag))] if flag is not None else []
            given += [(var, env[var]) for var in (FLAGS.env(name), name.upper()) if var in env]
            for source, value in given:
                if value != harmless:
                    raise SettingsError(f"{source} was removed: {why}")
                logger.warning(
                    "%s was removed and is ignored (its value %s is the only one there is); unset it", source, value
                )
        values: dict[str, Any] = {}
        for name, raw in FLAGS.values(args, env).items():
            try:
                values[name] = type(getattr(cls, name))(raw)
            except ValueError as exc:
                raise SettingsError(f"{FLAGS.twin(name)}: {exc}") from exc
        return cls(**values)


def _flag(name: str, help_text: str, metavar: str | None = None) -> Flag:
    default = getattr(Settings, name)
    return Flag(name, help_text, repr(default), metavar, type(default))


FLAGS = FlagTable(
    BRIDGE_PREFIX,
    (
        _flag(
            "node_name", "Name of the Node this agent serves (in a DaemonSet, from the downward API). Required for run."
        ),
        _flag("kubelet_dir", "The kubelet root directory: holds pod-resources/ and device-plugins/.", "DIR"),
        _flag("state_dir", "Directory of the node-local inventory state; must survive restarts and reboots.", "DIR"),
        _flag("catalog", "Optional user catalog file extending the shipped one; empty for none.", "FILE"),
        _flag("poll_interval", "Seconds between inventory polls and slice resyncs.", "SECONDS"),
        _flag("settle_period", "Seconds every interlock must hold before publishing starts.", "SECONDS"),
        _flag(
            "kubeconfig",
            "Kubeconfig file (one file, not a colon-separated list); empty means the in-cluster service account.",
            "FILE",
        ),
        _flag(
            "resource_api_version",
            "Force a resource.k8s.io version: v1, v1beta2 or v1beta1, with or without the "
            "resource.k8s.io/ prefix; empty means discovery picks the newest served.",
        ),
        _flag(
            "health_port", "Port of the readiness/liveness and Prometheus endpoints, 1-65535; 0 disables them.", "PORT"
        ),
        _flag("log_level", "Log level: DEBUG, INFO, WARNING or ERROR, in any case. Logs go to stderr.", "LEVEL"),
        _flag(
            "pod_uid",
            "This agent pod's UID (downward API metadata.uid). When set, the DRA plugin's registration "
            "and service sockets are named with it, so that two agents of a node can overlap during a "
            "DaemonSet rolling update with maxSurge (kubelets 1.33+); empty keeps the fixed names.",
            "UID",
        ),
        _flag(
            "unhealthy_taint_after",
            "Seconds a device must be unhealthy (the health stream's rule) before its slice device gets "
            "the dra-bridge.io/unhealthy NoSchedule taint (left out of the slice where the API server "
            "drops device taints).",
            "SECONDS",
        ),
        _flag(
            "healthy_untaint_after",
            "Seconds a tainted device must be healthy again before the taint is removed.",
            "SECONDS",
        ),
        _flag(
            "claim_grace_period",
            "Seconds a prepared claim must be gone from the API server, with no container on the node "
            "using its devices, before its checkpoint entry is unprepared and removed.",
            "SECONDS",
        ),
        _flag(
            "cdi_dir",
            "The container runtime's CDI spec directories (containerd's cdi_spec_dirs), comma separated, "
            "in increasing priority: the container toolkit's spec is looked up in all of them, our "
            "per-claim specs are written to the last (a tmpfs such as /var/run/cdi is fine: they are "
            "rewritten from the checkpoint after a reboot).",
            "DIR[,DIR...]",
        ),
        _flag(
            "nvml_driver_root",
            "Where the host's NVIDIA driver root is mounted (the chart's NVML agent: /driver-root): "
            "libnvidia-ml.so.1 is loaded from its lib directories at start; empty means the image's "
            "library path (no NVML there: health UNKNOWN, no pcieRoot, names from GFD labels).",
            "DIR",
        ),
    ),
    legacy=frozenset(f.name for f in fields(Settings))
    - {
        "cdi_dir",
        "pod_uid",
        "claim_grace_period",
        "unhealthy_taint_after",
        "healthy_untaint_after",
        "nvml_driver_root",
    },
)
"""The agent's flags, their ``DRA_BRIDGE_`` twins and the deprecated unprefixed names (kube.flags)."""


#: Settings that were removed -> (why, the one value that is harmless): the one-line error when
#: one is still given (as a flag, its ``DRA_BRIDGE_`` twin or its former unprefixed name) with
#: another value; the harmless value only logs a warning.
REMOVED: dict[str, tuple[str, str]] = {
    "driver_name": (
        "the bridge always publishes under the driver name the DeviceClasses select "
        f"({BRIDGE_DRIVER}, the shipped catalog's bridgeDriver), so that converted claims match its "
        "devices; unset it (docs/bridge.md)",
        BRIDGE_DRIVER,
    ),
}


def build_parser(parser: argparse.ArgumentParser, default: Any = None) -> argparse.ArgumentParser:
    """Add the agent's flags (defaulting to None, so environment twins can apply; a subcommand's
    parser passes ``argparse.SUPPRESS`` so it does not hide flags given before the subcommand),
    and the removed ones, hidden from help, so that giving one is an error naming it."""
    for name in REMOVED:
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default=default, help=argparse.SUPPRESS)
    return FLAGS.add_to(parser, default)
