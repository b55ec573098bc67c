"""One plan, many front ends (docs/design.md D1): a pod or pod template -> a Plan.

    plan_pod(pod, catalog, options) -> Plan(templates, pod, findings, changed, record)

``pod`` is any object with ``metadata`` and ``spec`` (a Pod, or the ``spec.template`` of a
workload) as decoded from YAML/JSON; it is never mutated. ``Plan.pod`` is the migrated pod,
or ``pod`` itself when nothing changes: it shares every subtree the migration leaves alone
with ``pod`` (copy-on-write: the metadata, the spec, the containers and their resources are
new objects; env, volumes, ... are the input's), so treat both as read-only and clone
(``translate.json_copy.clone``) before mutating either. ``Plan.templates`` are
the ResourceClaimTemplates (rendered in ``options.api_version``) that must exist in the
pod's namespace. The webhook and ``dra-migrate convert`` both call this.

Zero-count legacy requests (``nvidia.com/gpu: "0"``) are dropped with a finding: the scheduler
and the kubelet treat them as nothing. A pod with only those loses them and gets no claim and
no record (``Plan.dropped_zero`` names them; nothing to undo or re-create).

Idempotent: a pod carrying the conversion annotation, or without legacy requests, is left
unchanged, so ``plan_pod(plan_pod(x).pod).pod == plan_pod(x).pod``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from dra_bridge.translate.catalog import Catalog, Target
from dra_bridge.translate.dns_names import digest, resource_label, to_label, unique_labels
from dra_bridge.translate.findings import Finding, Remedy, blocks_conversion, worst
from dra_bridge.translate.names import (
    DEFAULT_API_VERSION,
    GFD_PREFIX,
    MANAGED_BY_CONVERT,
    MINOR_FOR_VERSION,
    normalize_api_version,
)
from dra_bridge.translate.plan import alignment, foreign, mig_single, sharing, stay_legacy
from dra_bridge.translate.plan.alignment import Alignment
from dra_bridge.translate.plan.claim_templates import render_template
from dra_bridge.translate.plan.demand import ContainerDemand, collect
from dra_bridge.translate.plan.field_types import shape_problems
from dra_bridge.translate.plan.placement import Placement, place
from dra_bridge.translate.plan.pod_rewrite import PodClaims, remove_legacy, rewrite, writable
from dra_bridge.translate.plan.record import ConversionRecord, RecordedOptions
from dra_bridge.translate.plan.request_layout import Demand, layout


@dataclass(frozen=True)
class Options:
    """How to plan. ``api_version``: the resource.k8s.io version to render;
    ``kubernetes_minor``: the target release's minor version (default: the one that
    introduced ``api_version``); ``managed_by``: the templates' managed-by value;
    ``hami_slicing``: ``unsupported`` or ``whole-devices``; ``keep_legacy_partial``: keep
    pods whose translation would be partial on the device plugin; ``kep5004``: resource name
    -> DeviceClass serving it through KEP-5004 (count-only pods are left to it); ``dra_schedulers``:
    schedulers besides the default one known to support DRA; ``fail_requests_greater_than_one``:
    the device plugin's sharing config fails shared requests greater than one (such pods stay
    legacy, as the catalog entry's ``failRequestsGreaterThanOne`` does for its resource);
    ``alignment``: the NUMA/PCIe alignment to keep as claim constraints
    (:mod:`~translate.plan.alignment`; none by default); ``device_domains``: extended-resource
    domains (or ``domain/prefix``) of accelerators besides ``translate.names.ACCELERATOR_DOMAINS``,
    whose resources outside the catalog keep the pod legacy (:mod:`~translate.plan.foreign`)."""

    api_version: str = DEFAULT_API_VERSION
    kubernetes_minor: int | None = None
    managed_by: str = MANAGED_BY_CONVERT
    hami_slicing: Literal["unsupported", "whole-devices"] = "unsupported"
    keep_legacy_partial: bool = False
    kep5004: Mapping[str, str] = field(default_factory=dict)
    dra_schedulers: tuple[str, ...] = ()
    fail_requests_greater_than_one: bool = False
    alignment: Alignment = field(default_factory=Alignment)
    device_domains: tuple[str, ...] = ()

    @property
    def minor(self) -> int:
        """The target Kubernetes minor version."""
        if self.kubernetes_minor is not None:
            return self.kubernetes_minor
        return MINOR_FOR_VERSION[normalize_api_version(self.api_version)]


@dataclass(frozen=True)
class Plan:
    """``templates`` to exist (namespace set when known), the ``pod`` to admit, ``findings``,
    whether the pod ``changed``, the conversion ``record`` written on it (None when unchanged,
    or when only zero-count requests were dropped) and the resource names of those
    (``dropped_zero``, set only then)."""

    templates: tuple[dict[str, Any], ...]
    pod: dict[str, Any]
    findings: tuple[Finding, ...]
    changed: bool
    record: ConversionRecord | None = None
    dropped_zero: frozenset[str] = frozenset()

    @property
    def plan_hash(self) -> str:
        """The plan hash recorded on the pod ("" when unchanged)."""
        return self.record.plan if self.record else ""

    @property
    def converted(self) -> frozenset[str]:
        """The legacy resource names the conversion removed (none when unchanged), zero-count
        ones included (a pod with only those changes without a record)."""
        return (self.record.resources if self.record else frozenset()) | self.dropped_zero

    @property
    def severity(self) -> int:
        """The worst finding's severity (0-3)."""
        return worst(self.findings)


def _unchanged(pod: Mapping[str, Any], findings: list[Finding]) -> Plan:
    return Plan((), pod if isinstance(pod, dict) else dict(pod), tuple(findings), False)


def plan_pod(
    pod: Mapping[str, Any], catalog: Catalog, options: Options = Options(), namespace: str | None = None, path: str = ""
) -> Plan:
    """Plan the migration of one pod or pod template (pure; see the module docstring).

    ``path`` prefixes finding paths (``spec.template.`` for a Deployment). Never raises for
    odd pods: problems become findings and the pod is left unchanged.
    """
    normalize_api_version(options.api_version)  # an unsupported version raises, whatever the pod
    problems = shape_problems(pod, path)
    if problems:
        return _unchanged(pod, problems)
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = meta.get("annotations") or {}
    findings: list[Finding] = []
    demands = collect(spec, catalog, path, findings, options.device_domains)
    wanted = [d for d in demands if d.count > 0]
    zeros = [d for d in demands if d.count == 0]
    owner = foreign.other_gpu_controller(meta, spec, path) if wanted or blocks_conversion(findings) else None
    if owner is not None:
        return _unchanged(pod, [owner])
    if not wanted:
        return _drop_zero_counts(pod, spec, zeros, findings) if zeros else _unchanged(pod, findings)
    again = stay_legacy.converted_before(annotations, path)
    if again is not None:
        return _unchanged(pod, [again])
    too_many = stay_legacy.too_many_devices(sum(d.count for d in wanted if d.mapping.kind != "slicing"), wanted[0].path)
    if too_many is not None:
        return _unchanged(pod, [*findings, too_many])
    findings += [
        f
        for f in (
            stay_legacy.pinned_to_node(spec, path),
            stay_legacy.scheduler_without_dra(spec, options.dra_schedulers, path),
        )
        if f is not None
    ]
    if (
        options.kep5004
        and all(d.mapping.resource_name in options.kep5004 for d in wanted)
        and not (_has_gpu_placement(spec, annotations))
    ):
        for d in wanted:
            dclass = options.kep5004[d.mapping.resource_name]
            findings.append(Finding(d.path, d.legacy, "ignored", f"served by KEP-5004 DeviceClass {dclass}"))
        return _unchanged(pod, findings)
    placement = place(spec, annotations, path, options.minor, catalog.aliases)
    wanted, dropped = _apply_kinds(wanted, catalog, options, placement, findings)
    target = catalog.target
    uses_gfd = any(d.mapping.gfd == "nvidia" for d in wanted)
    if uses_gfd:
        findings += placement.findings
    if spec.get("priorityClassName") or spec.get("priority"):
        findings.append(
            Finding(
                f"{path}spec.priorityClassName",
                str(spec.get("priorityClassName", "")),
                "partial",
                "the pod may rely on preemption, and the scheduler may not preempt lower-priority "
                "pods to free DRA devices: check your release's DRA preemption support before "
                "converting high-priority workloads",
            )
        )
    findings += alignment.unalignable(
        [(d.mapping, d.count, d.container, d.path, d.legacy) for d in wanted], target, options.alignment, path
    )
    verdict = stay_legacy.translation_not_faithful(findings, options.keep_legacy_partial, path)
    if verdict is not None:
        return _unchanged(pod, [*findings, verdict])
    findings += [_zero_dropped(d) for d in zeros]
    dropped |= {d.mapping.resource_name for d in zeros}
    kept_placement = placement if uses_gfd else None
    claims = _claims(wanted, kept_placement, options, target, spec, namespace, findings)
    new, record = rewrite(pod, claims, dropped, kept_placement, RecordedOptions.of(options, catalog))
    return Plan(claims.templates, new, tuple(findings), True, record)


def _has_gpu_placement(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> bool:
    text = json.dumps([spec.get("nodeSelector"), spec.get("affinity")])
    return GFD_PREFIX in text or any(str(k).startswith(GFD_PREFIX) for k in annotations)


def _apply_kinds(
    wanted: list[ContainerDemand], catalog: Catalog, options: Options, placement: Placement, findings: list[Finding]
) -> tuple[list[ContainerDemand], set[str]]:
    """Apply per-kind rules; returns the demands to translate and the resource names to drop
    without a request (HAMi slicing converted to whole devices). MIG single-strategy nodes:
    :mod:`~translate.plan.mig_single`."""
    out = []
    dropped: set[str] = set()
    for d in wanted:
        m = d.mapping
        kept = stay_legacy.hami_slicing_kept(
            m, options.hami_slicing == "whole-devices", d.path, d.legacy
        ) or stay_legacy.shared_count_over_one(m, d.count, options.fail_requests_greater_than_one, d.path, d.legacy)
        if kept is not None:
            findings.append(kept)
            continue
        if m.kind == "slicing":
            findings.append(
                Finding(d.path, d.legacy, "partial", f"{m.reason}; dropped: the container gets whole devices")
            )
            dropped.add(m.resource_name)
            continue
        if m.kind == "shared":
            count, finding = sharing.shared_request(m, d.count, catalog.target, d.path, d.legacy)
            findings.append(finding)
            d = replace(d, count=count)
        m, notes = mig_single.serve(m, placement, catalog, d.path, d.legacy)
        findings += notes
        d = replace(d, mapping=m)
        if m.profile and m.profile not in catalog.mig_profiles and catalog.target == "bridge":
            findings.append(
                Finding(
                    d.path,
                    d.legacy,
                    "partial",
                    f"MIG profile {m.profile} is not in the catalog's profile list: create DeviceClass "
                    f"{m.device_class}",
                    Remedy.ADD_MIG_PROFILE_CLASS,
                    m.profile,
                )
            )
        out.append(d)
    return out, dropped


def _claims(
    wanted: list[ContainerDemand],
    placement: Placement | None,
    options: Options,
    target: Target,
    spec: Mapping[str, Any],
    namespace: str | None,
    findings: list[Finding],
) -> PodClaims:
    """The requests, claims and claim templates of ``wanted`` (findings appended)."""
    requests, users, verdicts, converted = _requests(wanted, placement, options, target, findings)
    # Claims: at most 32 devices and 32 requests each (resource.k8s.io/v1 limits), the requests
    # of one alignment constraint in one claim.
    counts = [r["count"] for r in requests]
    together = alignment.groups(users, counts, [v[0] is None for v in verdicts], options.alignment)
    claims, lost = alignment.pack_claims(counts, together)
    where = {d.container: (d.path, d.legacy) for d in reversed(wanted)} | {"": (wanted[0].path, wanted[0].legacy)}
    findings += alignment.outcome(together, lost, [v[1] for v in verdicts], where, options.alignment)
    together = [g for i, g in enumerate(together) if i not in lost]
    existing = [str(c.get("name")) for c in spec.get("resourceClaims") or [] if isinstance(c, Mapping)]
    claim_names = unique_labels(["gpu" if len(claims) == 1 else f"gpu-{n}" for n in range(len(claims))], existing)
    internals: list[dict[str, Any]] = [
        {"requests": [{k: requests[i][k] for k in ("name", "deviceClassName", "count", "selectors")} for i in idx]}
        for idx in claims
    ]
    for internal, idx in zip(internals, claims, strict=True):
        constraints = alignment.claim_constraints(
            idx, together, [r["name"] for r in requests], options.alignment.attribute
        )
        if constraints:
            internal["constraints"] = constraints
    template_names = [f"dra-bridge-{digest({'managedBy': options.managed_by, 'spec': s}, 12)}" for s in internals]
    api_version = normalize_api_version(options.api_version)
    templates = tuple(
        render_template(s, n, namespace, api_version, options.managed_by)
        for s, n in zip(internals, template_names, strict=True)
    )
    return PodClaims(
        requests=tuple(requests),
        users=tuple(users),
        claim_of={i: c for c, idx in enumerate(claims) for i in idx},
        claim_names=tuple(claim_names),
        template_names=tuple(template_names),
        templates=templates,
        converted=converted,
    )


def _requests(
    wanted: list[ContainerDemand],
    placement: Placement | None,
    options: Options,
    target: Target,
    findings: list[Finding],
) -> tuple[list[dict[str, Any]], list[tuple[str, ...]], list[tuple[str | None, str]], frozenset[str]]:
    """The named DRA requests of ``wanted``, resource by resource in first-seen order, with the
    containers using each, each one's alignment verdict, and the resource names converted."""
    requests: list[dict[str, Any]] = []
    users: list[tuple[str, ...]] = []
    owners: list[str] = []
    verdicts: list[tuple[str | None, str]] = []
    by_resource: dict[str, list[ContainerDemand]] = {}
    for d in wanted:
        by_resource.setdefault(d.mapping.resource_name, []).append(d)
    for name, ds in by_resource.items():
        mapping = ds[0].mapping
        sels = list(mapping.selectors) + (list(placement.selectors) if placement and mapping.gfd else [])
        parts = layout([Demand(d.container, d.role, d.index, d.count) for d in ds])
        for part in parts:
            owners.append(to_label(f"{part.owner}-{resource_label(name)}"))
            requests.append({"deviceClassName": mapping.device_class, "count": part.count, "selectors": sels})
            users.append(part.users)
            verdicts.append(
                alignment.missing(mapping, target, options.alignment)
                if options.alignment.policy != "none"
                else ("none", "")
            )
        findings += [
            Finding(d.path, d.legacy, "translated", f"DRA request for DeviceClass {mapping.device_class}") for d in ds
        ]
    for req, name in zip(requests, unique_labels(owners), strict=True):
        req["name"] = name
    return requests, users, verdicts, frozenset(by_resource)


def _zero_dropped(d: ContainerDemand) -> Finding:
    return Finding(
        d.path,
        d.legacy,
        "translated",
        "a zero count asks for no device (the scheduler and the kubelet treat it as nothing): dropped, no claim",
    )


def _drop_zero_counts(
    pod: Mapping[str, Any], spec: Mapping[str, Any], zeros: list[ContainerDemand], findings: list[Finding]
) -> Plan:
    """A pod whose only legacy requests count zero: they go, with a finding each, and nothing
    else changes (no claim, no record: there is nothing to undo or to re-create). A finding
    that forbids rewriting the pod (an invalid request) leaves it as it was."""
    if blocks_conversion(findings):
        return _unchanged(pod, findings)
    new = writable(pod, spec)
    names = {d.mapping.resource_name for d in zeros}
    for fld in ("initContainers", "containers"):
        for c in new["spec"].get(fld) or []:
            if isinstance(c.get("resources"), dict) and remove_legacy(c["resources"], names) and not c["resources"]:
                del c["resources"]
    return Plan((), new, (*findings, *(_zero_dropped(d) for d in zeros)), True, dropped_zero=frozenset(names))
