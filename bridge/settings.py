"""Agent settings: a frozen dataclass built only by :meth:`Settings.from_args` / :meth:`Settings.from_env`.

Every flag has an UPPER_SNAKE environment twin (style.md item 13); a flag given on the command
line wins over its environment variable, which wins over the default. These two constructors
are the only places that read the environment.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import itertools
import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from bridge.errors import SettingsError
from translate.dns_names import is_dns_subdomain
from translate.names import normalize_api_version

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
"""The values ``--log-level``/``LOG_LEVEL`` accept (in any case)."""


@dataclass(frozen=True)
class Settings:
    """The agent's configuration."""

    node_name: str = ""
    """Name of the Node this agent serves (NODE_NAME; in a DaemonSet, from the downward API). Required for ``run``."""
    kubelet_dir: str = "/var/lib/kubelet"
    """The kubelet root directory (KUBELET_DIR): holds ``pod-resources/`` and ``device-plugins/``."""
    state_dir: str = "/var/lib/dra-bridge"
    """Directory of the node-local inventory state (STATE_DIR); must survive restarts and reboots."""
    driver_name: str = "dra-bridge.io"
    """The DRA driver name our ResourceSlices carry (DRIVER_NAME); a DNS subdomain of at most 63 characters."""
    catalog: str = ""
    """Optional user catalog file extending the shipped one (CATALOG); empty for none."""
    poll_interval: float = 30.0
    """Seconds between inventory polls and slice resyncs (POLL_INTERVAL)."""
    settle_period: float = 120.0
    """Seconds every interlock must hold before publishing starts (SETTLE_PERIOD)."""
    kubeconfig: str = ""
    """Kubeconfig file (KUBECONFIG; one file, not a colon-separated list); empty means the in-cluster
    service account."""
    resource_api_version: str = ""
    """Force a resource.k8s.io version (RESOURCE_API_VERSION): v1, v1beta2 or v1beta1, with or without the
    resource.k8s.io/ prefix; empty means discovery picks the newest served."""
    health_port: int = 8081
    """Port of the readiness/liveness and Prometheus endpoints (HEALTH_PORT), 1-65535; 0 disables them."""
    log_level: str = "INFO"
    """Log level (LOG_LEVEL): DEBUG, INFO, WARNING or ERROR, in any case. Logs go to stderr."""

    def validate(self, need_node: bool = True) -> Settings:
        """The settings (resource_api_version in its full form), or SettingsError naming the
        flag and its environment twin."""
        if need_node and not is_dns_subdomain(self.node_name):
            raise SettingsError(f"--node-name/NODE_NAME must be a node name, got {self.node_name!r}")
        if not is_dns_subdomain(self.driver_name) or len(self.driver_name) > 63:
            raise SettingsError(f"--driver-name/DRIVER_NAME must be a DNS subdomain (<= 63), got {self.driver_name!r}")
        if self.poll_interval <= 0 or self.settle_period < 0:
            raise SettingsError("--poll-interval/POLL_INTERVAL must be > 0 and --settle-period/SETTLE_PERIOD >= 0")
        version = self.resource_api_version
        if version:
            try:
                version = normalize_api_version(version)
            except ValueError:
                raise SettingsError("--resource-api-version/RESOURCE_API_VERSION must be v1, v1beta2 or v1beta1 "
                                    f"(resource.k8s.io/ prefix optional), got {self.resource_api_version!r}") from None
        if not 0 <= self.health_port <= 65535:
            raise SettingsError(f"--health-port/HEALTH_PORT must be a port number (1-65535) or 0 for none, "
                                f"got {self.health_port}")
        if self.log_level.upper() not in LOG_LEVELS:
            raise SettingsError(f"--log-level/LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {self.log_level!r}")
        return replace(self, resource_api_version=version)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from environment variables only (unset ones keep their defaults)."""
        return cls.from_args([], env)

    @classmethod
    def from_args(cls, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Settings:
        """Settings from flags, falling back to environment twins, then defaults."""
        env = os.environ if env is None else env
        parser = build_parser(argparse.ArgumentParser(add_help=False))
        args, _ = parser.parse_known_args(list(argv))
        return cls.from_namespace(args, env)

    @classmethod
    def from_namespace(cls, args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from parsed flags (``None`` = not given) and environment twins."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in fields(cls):
            given = getattr(args, f.name, None)
            raw = given if given is not None else env.get(f.name.upper())
            if raw is None:
                continue
            try:
                values[f.name] = type(getattr(cls, f.name))(raw)
            except ValueError as exc:
                flag = "--" + f.name.replace("_", "-")
                raise SettingsError(f"{flag}/{f.name.upper()}: {exc}") from exc
        return cls(**values)


def _field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (they are the flags' help texts)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # no source shipped: fall back to the names
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr) \
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            out[node.target.id] = " ".join(after.value.value.split()).replace("``", "").replace("%", "%%")
    return out


_FIELD_HELP = _field_docs(Settings)


def build_parser(parser: argparse.ArgumentParser, default: Any = None) -> argparse.ArgumentParser:
    """Add the agent's flags (defaulting to None, so environment twins can apply; a subcommand's
    parser passes ``argparse.SUPPRESS`` so it does not hide flags given before the subcommand)."""
    for f in fields(Settings):
        flag = "--" + f.name.replace("_", "-")
        parser.add_argument(flag, dest=f.name, default=default, type=type(getattr(Settings, f.name)),
                            help=f"{_FIELD_HELP.get(f.name, f.name.upper())} Default {getattr(Settings, f.name)!r}.")
    return parser
