"""The one options model (docs/design.md D26): every setting that shapes a conversion, once.

    Options                  the settings: plan options, the webhook policy's and the commands' flags
    option_specs()           each field's OptionSpec (:mod:`~translate.plan.option_spec`): policy key,
                             flag, record key, doc line
    policy_keys()            the policy's keys with their types, defaults and docs (the chart's schema)

Each field of :class:`Options` carries an :class:`OptionSpec` in its metadata, and everything
that names a setting is derived from it: the keys of the webhook policy (``translate.policy``
parses and validates them from the specs), the plan options a conversion record keeps
(``translate.plan.record.RecordedOptions``, their wire keys and rules) and the flags of
``dra-migrate convert`` and ``report`` (``migrate.option_flags``). A new setting is one field
here; tests/translate/test_options.py checks that every derived table is what the model says.

A field without a policy key, flag or record key is still an option of the plan: set by the
front end (``managed_by``, the cluster's KEP-5004 classes) or by the policy's matching (``rule``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from dra_bridge.translate.catalog import Target
from dra_bridge.translate.dns_names import DNS_SUBDOMAIN_PATTERN, MAX_SUBDOMAIN, is_dns_subdomain
from dra_bridge.translate.names import (
    DEFAULT_API_VERSION,
    MANAGED_BY_CONVERT,
    MANAGED_BY_WEBHOOK,
    MINOR_FOR_VERSION,
    normalize_api_version,
)
from dra_bridge.translate.plan.alignment import POLICIES, SCOPES, Alignment, AlignmentPolicy, AlignmentScope
from dra_bridge.translate.plan.option_spec import BOTH, Command, Kind, OptionSpec, about

#: An accelerator domain (``xilinx.com``) or a domain with a resource-name prefix (``example.org/npu-``).
_DEVICE_DOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/[-A-Za-z0-9_.]+)?")

HamiSlicing = Literal["unsupported", "whole-devices"]
OnError = Literal["admit-unchanged", "deny"]
TARGETS: tuple[Target, ...] = ("bridge", "vendor")
HAMI_SLICING: tuple[HamiSlicing, ...] = ("unsupported", "whole-devices")
ON_ERROR: tuple[OnError, ...] = ("admit-unchanged", "deny")


@dataclass(frozen=True)
class Options:
    """How to plan and whether to convert (see the module docstring; each field's doc is its
    :class:`OptionSpec`). The plan reads ``kep5004`` only as given: :meth:`plan_options` fills it
    where ``defer_to_kep5004``."""

    api_version: str = field(
        default=DEFAULT_API_VERSION,
        metadata=about(
            OptionSpec(
                "resource.k8s.io version to render (default v1)",
                flag="--api-version",
                commands=BOTH,
                metavar="v1|v1beta2|v1beta1",
            )
        ),
    )
    managed_by: str = field(
        default=MANAGED_BY_CONVERT,
        metadata=about(OptionSpec("the managed-by value of the templates written", record_key="managedBy")),
    )
    kubernetes_minor: int | None = field(
        default=None,
        metadata=about(
            OptionSpec(
                "the target release's minor version (default: the one that introduced the API version)",
                record_key="kubernetesMinor",
                what="minor version number",
            )
        ),
    )
    target: Target | None = field(
        default=None,
        metadata=about(
            OptionSpec(
                "DeviceClasses to use: ours (bridge, default) or the vendor driver's own",
                flag="--target",
                commands=BOTH,
                record_key="target",
                choices=TARGETS,
            )
        ),
    )
    convert: bool = field(
        default=True,
        metadata=about(
            OptionSpec("false: leave the pods in scope untouched (no patch, no warning)", policy_key="convert")
        ),
    )
    keep_legacy_partial: bool = field(
        default=False,
        metadata=about(
            OptionSpec("keep pods whose translation is partial on the device plugin", policy_key="keepLegacy")
        ),
    )
    hami_slicing: HamiSlicing = field(
        default="unsupported",
        metadata=about(
            OptionSpec(
                "HAMi memory/core slicing: keep such pods legacy, or convert them to whole devices",
                policy_key="hamiSlicing",
                flag="--hami-slicing",
                commands=BOTH,
                record_key="hamiSlicing",
                choices=HAMI_SLICING,
            )
        ),
    )
    on_error: OnError = field(
        default="admit-unchanged",
        metadata=about(
            OptionSpec(
                "what the webhook answers when a template cannot be ensured", policy_key="onError", choices=ON_ERROR
            )
        ),
    )
    defer_to_kep5004: bool = field(
        default=False,
        metadata=about(
            OptionSpec("leave count-only pods to KEP-5004 DeviceClasses that serve them", policy_key="deferToKEP5004")
        ),
    )
    kep5004: Mapping[str, str] = field(
        default_factory=dict,
        metadata=about(
            OptionSpec("the cluster's KEP-5004 classes: resource name -> DeviceClass (count-only pods are left to it)")
        ),
    )
    ignore_legacy_quota: bool = field(
        default=False,
        metadata=about(
            OptionSpec(
                "convert even where a quota limits only the legacy resource (lifts it)", policy_key="ignoreLegacyQuota"
            )
        ),
    )
    dra_schedulers: tuple[str, ...] = field(
        default=(),
        metadata=about(
            OptionSpec(
                "a scheduler besides default-scheduler that supports DRA (its pods are converted); repeatable",
                policy_key="draSchedulers",
                flag="--dra-scheduler",
                commands=BOTH,
                record_key="draSchedulers",
                metavar="NAME",
                what="scheduler names",
                valid=is_dns_subdomain,
                rule="must be a list of scheduler names (DNS subdomains, as spec.schedulerName)",
                pattern=DNS_SUBDOMAIN_PATTERN,
                max_length=MAX_SUBDOMAIN,
            )
        ),
    )
    device_domains: tuple[str, ...] = field(
        default=(),
        metadata=about(
            OptionSpec(
                "an extended-resource domain (or name prefix) of accelerators besides the built-in ones (nvidia.com, "
                "amd.com, gpu.intel.com, volcano.sh/vgpu-, HAMi's, org.instaslice): its resources outside the "
                "catalog keep the pod legacy; repeatable",
                flag="--device-domain",
                commands=BOTH,
                metavar="DOMAIN[/PREFIX]",
                what="domains or domain/prefix values",
                valid=lambda value: _DEVICE_DOMAIN.fullmatch(value) is not None,
                rule="a domain like xilinx.com, or a prefix like example.org/npu-",
            )
        ),
    )
    fail_requests_greater_than_one: bool = field(
        default=False,
        metadata=about(
            OptionSpec(
                "the device plugin's sharing config sets failRequestsGreaterThanOne: pods asking for more than one "
                "shared replica stay legacy, as they fail there too",
                policy_key="failRequestsGreaterThanOne",
                flag="--fail-requests-greater-than-one",
                commands=BOTH,
                record_key="failRequestsGreaterThanOne",
            )
        ),
    )
    alignment: AlignmentPolicy = field(
        default="none",
        metadata=about(
            OptionSpec(
                "keep the Topology Manager's alignment: a container's (or pod's) devices share their NUMA node (numa) "
                "or PCIe root (pcie) through a claim constraint (default none)",
                policy_key="alignment",
                flag="--alignment",
                commands=BOTH,
                record_key="alignment",
                recorded_with="alignment",
                choices=POLICIES,
            )
        ),
    )
    alignment_scope: AlignmentScope = field(
        default="container",
        metadata=about(
            OptionSpec(
                "align each container's devices or the whole pod's, as topologyManagerScope (default container)",
                policy_key="alignmentScope",
                flag="--alignment-scope",
                commands=BOTH,
                record_key="alignmentScope",
                recorded_with="alignment",
                choices=SCOPES,
            )
        ),
    )
    convert_half_migrated: bool = field(
        default=False,
        metadata=about(
            OptionSpec(
                "convert a pod that already has DRA claims besides a legacy request (half-migrated by hand): "
                "the legacy request gets a claim of its own (default: the pod is kept unchanged, with a warning)",
                policy_key="convertHalfMigrated",
                flag="--convert-half-migrated",
                commands=BOTH,
                record_key="convertHalfMigrated",
                recorded_with="convert_half_migrated",
            )
        ),
    )
    rule: str = field(
        default="", metadata=about(OptionSpec("the policy rule these options come from (empty: the defaults)"))
    )

    @property
    def minor(self) -> int:
        """The target Kubernetes minor version."""
        if self.kubernetes_minor is not None:
            return self.kubernetes_minor
        return MINOR_FOR_VERSION[normalize_api_version(self.api_version)]

    @property
    def topology(self) -> Alignment:
        """The NUMA/PCIe alignment to keep as claim constraints (:mod:`~translate.plan.alignment`)."""
        return Alignment(self.alignment, self.alignment_scope)

    def plan_options(
        self, api_version: str, kep5004: Mapping[str, str], managed_by: str = MANAGED_BY_WEBHOOK
    ) -> Options:
        """These options (a policy scope's) as the webhook plans with them: ``api_version`` and
        ``managed_by`` as given, ``kep5004`` (the cluster's classes) only where ``defer_to_kep5004``."""
        return replace(
            self, api_version=api_version, managed_by=managed_by, kep5004=kep5004 if self.defer_to_kep5004 else {}
        )


def _kind(default: Any, spec: OptionSpec) -> Kind:
    if spec.choices:
        return "choice"
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, tuple):
        return "names"
    if spec.what and not isinstance(default, str):
        return "number"
    return "text"


def _specs() -> tuple[OptionSpec, ...]:
    out = []
    for f in fields(Options):
        spec: OptionSpec = f.metadata["option"]
        factory = f.default_factory
        default = factory() if callable(factory) else f.default
        kind: Kind = "mapping" if isinstance(default, Mapping) else _kind(default, spec)
        out.append(replace(spec, attribute=f.name, kind=kind, default=default))
    return tuple(out)


_SPECS = _specs()


def option_specs() -> tuple[OptionSpec, ...]:
    """Every field's :class:`OptionSpec`, in field order (attribute, kind and default filled)."""
    return _SPECS


_POLICY_SPECS = tuple(s for s in _SPECS if s.policy_key)
_RECORDED_SPECS = tuple(s for s in _SPECS if s.record_key)


def policy_specs() -> tuple[OptionSpec, ...]:
    """The options the webhook policy sets, in field order."""
    return _POLICY_SPECS


def recorded_specs() -> tuple[OptionSpec, ...]:
    """The options a conversion record keeps, in field order (computed once: every admission
    writes a record)."""
    return _RECORDED_SPECS


def flag_specs(command: Command) -> tuple[OptionSpec, ...]:
    """The options ``dra-migrate COMMAND`` takes as flags, in field order."""
    return tuple(s for s in _SPECS if s.flag and command in s.commands)


_JSON_TYPES: dict[Kind, str] = {"bool": "boolean", "choice": "string", "names": "array", "text": "string"}


def policy_keys() -> list[dict[str, Any]]:
    """The policy's keys as the chart's schema needs them: ``{key, type, default, doc}``, with
    ``enum`` for a choice and ``items`` for a list (JSON Schema type names), and a list item's
    ``pattern`` and ``maxLength`` where its rule has them."""
    out: list[dict[str, Any]] = []
    for s in policy_specs():
        entry: dict[str, Any] = {"key": s.policy_key, "type": _JSON_TYPES[s.kind], "default": s.default, "doc": s.doc}
        if s.kind == "choice":
            entry["enum"] = list(s.choices)
        if s.kind == "names":
            entry["items"] = "string"
            entry["default"] = list(s.default)
            if s.pattern:
                entry["pattern"] = s.pattern
            if s.max_length:
                entry["maxLength"] = s.max_length
        out.append(entry)
    return out


__all__ = [
    "Command",
    "Options",
    "flag_specs",
    "option_specs",
    "policy_keys",
    "policy_specs",
    "recorded_specs",
]
