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
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.findings import Finding, Remedy, blocks_conversion, worst
from dra_bridge.translate.names import (
    GFD_PREFIX,
    normalize_api_version,
)
from dra_bridge.translate.plan import alignment, foreign, mig_single, sharing, stay_legacy
from dra_bridge.translate.plan.claim_plan import plan_claims
from dra_bridge.translate.plan.demand import ContainerDemand, collect
from dra_bridge.translate.plan.field_types import shape_problems
from dra_bridge.translate.plan.options import Options  # the options model lives in options.py; importable from here too
from dra_bridge.translate.plan.placement import Placement, place
from dra_bridge.translate.plan.pod_rewrite import remove_legacy, rewrite, writable
from dra_bridge.translate.plan.record import ConversionRecord, RecordedOptions


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
    facts = stay_legacy.Facts(spec, annotations, tuple(wanted), options, path)
    so_far = facts.adding(findings)  # the gates and the checks read the same findings
    stop = stay_legacy.gate(so_far)
    if stop is not None:
        return _unchanged(pod, [*findings, stop])
    findings += stay_legacy.checks(so_far)
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
    wanted, dropped = _apply_kinds(facts.placed(placement), catalog, placement, findings)
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
    if options.alignment != "none":  # without a policy nothing is unalignable
        findings += alignment.unalignable(
            [(d.mapping, d.count, d.container, d.path, d.legacy) for d in wanted], target, options.topology, path
        )
    verdict = stay_legacy.translation_not_faithful(facts.adding(findings))
    if verdict is not None:
        return _unchanged(pod, [*findings, verdict])
    if zeros:
        findings += [_zero_dropped(d) for d in zeros]
        dropped |= {d.mapping.resource_name for d in zeros}
    kept_placement = placement if uses_gfd else None
    claims, over = plan_claims(wanted, kept_placement, options, target, spec, namespace, findings)
    if over is not None:
        return _unchanged(pod, [*findings, over, *_verdict(facts.adding([*findings, over]))])
    new, record = rewrite(pod, claims, dropped, kept_placement, RecordedOptions.of(options, catalog))
    return Plan(claims.templates, new, tuple(findings), True, record)


def _verdict(facts: stay_legacy.Facts) -> list[Finding]:
    verdict = stay_legacy.translation_not_faithful(facts)
    return [] if verdict is None else [verdict]


def _has_gpu_placement(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> bool:
    text = json.dumps([spec.get("nodeSelector"), spec.get("affinity")])
    return GFD_PREFIX in text or any(str(k).startswith(GFD_PREFIX) for k in annotations)


def _apply_kinds(
    facts: stay_legacy.Facts, catalog: Catalog, placement: Placement, findings: list[Finding]
) -> tuple[list[ContainerDemand], set[str]]:
    """Apply per-kind rules; returns the demands to translate and the resource names to drop
    without a request (HAMi slicing converted to whole devices). MIG single-strategy nodes:
    :mod:`~translate.plan.mig_single`."""
    out = []
    dropped: set[str] = set()
    for d in facts.demands:
        m = d.mapping
        kept = stay_legacy.request_check(facts.of(d))
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
            d = _but(d, count=count)
        if not placement.mig_profiles:
            replicas = sharing.shared_product_request(
                m, d.count, catalog.target, placement.shared_products, d.path, d.legacy
            )
            findings += [replicas] if replicas is not None else []
        m, notes = mig_single.serve(m, placement, catalog, d.path, d.legacy)
        findings += notes
        if m is not d.mapping:
            d = _but(d, mapping=m)
        if (
            m.profile
            and catalog.canonical_profile(m.profile) not in catalog.mig_profiles
            and catalog.target == "bridge"
        ):
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


def _but(demand: ContainerDemand, **changes: Any) -> ContainerDemand:
    """``dataclasses.replace(demand, **changes)`` without its field-by-field walk (plain values)."""
    new = object.__new__(ContainerDemand)
    vars(new).update(vars(demand), **changes)
    return new


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


__all__ = ["Options", "Plan", "plan_pod"]
