"""The DRA requests, claims and ResourceClaimTemplates of a pod's legacy demands, and whether the
API server would accept those templates (:mod:`~translate.plan.api_limits`).

    plan_claims(wanted, placement, options, target, spec, namespace, findings)
        -> (PodClaims, the over-limit finding or None)

Requests are laid out per resource (:mod:`~translate.plan.request_layout`), packed into claims of
at most 32 devices and 32 requests, the requests of one alignment constraint in one claim
(:mod:`~translate.plan.alignment`), and each claim gets a content-addressed template name.

Remembered: the layout is a pure function of what it reads (the demands, the GPU node selectors
when placement is kept, the alignment, the target, the names of the pod's own claims, the
namespace, the API version and the managed-by value), so the answers for the last
:data:`MEMO_SIZE` such inputs are kept, keyed by exactly those values: the pods of one workload
shape (most of a cluster) are laid out once. The templates are rendered anew for every call (the
caller owns them); what is kept is never handed out to be changed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.catalog import Target
from dra_bridge.translate.dns_names import digest, resource_label, to_label, unique_labels
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.names import normalize_api_version
from dra_bridge.translate.plan import alignment, api_limits
from dra_bridge.translate.plan.claim_templates import render_template
from dra_bridge.translate.plan.demand import ContainerDemand
from dra_bridge.translate.plan.options import Options
from dra_bridge.translate.plan.placement import Placement
from dra_bridge.translate.plan.pod_rewrite import PodClaims
from dra_bridge.translate.plan.request_layout import Demand, layout

#: Layouts remembered (distinct workload shapes): a bounded memo, least recently used first out,
#: of inputs whose text (names, selectors) is at most MEMO_TEXT characters (a larger one is laid
#: out each time, so the memo holds a few MB at most whatever the pods).
MEMO_SIZE = 512
MEMO_TEXT = 16384


@dataclass(frozen=True)
class _Laid:
    """One layout: the claims (their templates not rendered), the internal form of each
    template, the findings it adds and the API-limit finding of its templates (None: accepted)."""

    claims: PodClaims
    internals: tuple[dict[str, Any], ...]
    findings: tuple[Finding, ...]
    over: Finding | None


def plan_claims(
    wanted: Sequence[ContainerDemand],
    placement: Placement | None,
    options: Options,
    target: Target,
    spec: Mapping[str, Any],
    namespace: str | None,
    findings: list[Finding],
) -> tuple[PodClaims, Finding | None]:
    """The requests, claims and claim templates of ``wanted`` (findings appended), and the
    finding that keeps the pod legacy because the API server would refuse a template (or None).
    ``placement``: the pod's GPU node selection when it moves into the requests (else None)."""
    existing = tuple(
        str(c.get("name")) for c in spec.get("resourceClaims") or [] if (type(c) is dict or isinstance(c, Mapping))
    )
    api_version = normalize_api_version(options.api_version)
    selectors = None if placement is None else tuple(placement.selectors)
    key = (tuple(wanted), selectors, options.topology, target, existing, namespace, api_version, options.managed_by)
    kept = (namespace is None or type(namespace) is str) and _weight(key) <= MEMO_TEXT  # a str key, short
    laid = _laid(*key) if kept else _laid.__wrapped__(*key)
    findings += laid.findings
    claims = laid.claims
    templates = tuple(
        render_template(s, n, namespace, api_version, options.managed_by)
        for s, n in zip(laid.internals, claims.template_names, strict=True)
    )
    return (
        PodClaims(
            claims.requests,
            claims.users,
            claims.claim_of,
            claims.claim_names,
            claims.template_names,
            templates,
            claims.converted,
        ),
        laid.over,
    )


def _weight(key: tuple[Any, ...]) -> int:
    """The characters of a layout's input that the memo would keep (its strings)."""
    wanted, selectors, _, _, existing, namespace, _, managed_by = key
    strings = [*(s for d in wanted for s in (d.container, d.legacy, d.path)), *(selectors or ()), *existing]
    return sum(map(len, strings)) + len(namespace or "") + len(str(managed_by))


@functools.lru_cache(maxsize=MEMO_SIZE, typed=True)
def _laid(
    wanted: tuple[ContainerDemand, ...],
    selectors: tuple[str, ...] | None,
    topology: alignment.Alignment,
    target: Target,
    existing: tuple[str, ...],
    namespace: str | None,
    api_version: str,
    managed_by: str,
) -> _Laid:
    """The layout of ``wanted`` (pure: everything it reads is an argument, the memo's key)."""
    findings: list[Finding] = []
    requests, users, verdicts, converted = _requests(wanted, selectors, topology, target, findings)
    # Claims: at most 32 devices and 32 requests each (resource.k8s.io/v1 limits), the requests
    # of one alignment constraint in one claim.
    counts = [r["count"] for r in requests]
    together = alignment.groups(users, counts, [v[0] is None for v in verdicts], topology)
    claims, lost = alignment.pack_claims(counts, together)
    where = {d.container: (d.path, d.legacy) for d in reversed(wanted)} | {"": (wanted[0].path, wanted[0].legacy)}
    findings += alignment.outcome(together, lost, [v[1] for v in verdicts], where, topology)
    together = [g for i, g in enumerate(together) if i not in lost]
    claim_names = unique_labels(["gpu" if len(claims) == 1 else f"gpu-{n}" for n in range(len(claims))], existing)
    internals: list[dict[str, Any]] = [
        {"requests": [{k: requests[i][k] for k in ("name", "deviceClassName", "count", "selectors")} for i in idx]}
        for idx in claims
    ]
    for internal, idx in zip(internals, claims, strict=True):
        constraints = alignment.claim_constraints(idx, together, [r["name"] for r in requests], topology.attribute)
        if constraints:
            internal["constraints"] = constraints
    template_names = [f"dra-bridge-{digest({'managedBy': managed_by, 'spec': s}, 12)}" for s in internals]
    templates = tuple(
        render_template(s, n, namespace, api_version, managed_by)
        for s, n in zip(internals, template_names, strict=True)
    )
    pod_claims = PodClaims(
        requests=tuple(requests),
        users=tuple(users),
        claim_of={i: c for c, idx in enumerate(claims) for i in idx},
        claim_names=tuple(claim_names),
        template_names=tuple(template_names),
        templates=(),
        converted=converted,
    )
    over = api_limits.first_problem(templates, wanted[0].path, wanted[0].legacy)
    return _Laid(pod_claims, tuple(internals), tuple(findings), over)


def _requests(
    wanted: Sequence[ContainerDemand],
    selectors: tuple[str, ...] | None,
    topology: alignment.Alignment,
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
        sels = list(mapping.selectors) + (list(selectors) if selectors is not None and mapping.gfd else [])
        parts = layout([Demand(d.container, d.role, d.index, d.count) for d in ds])
        for part in parts:
            owners.append(to_label(f"{part.owner}-{resource_label(name)}"))
            requests.append({"deviceClassName": mapping.device_class, "count": part.count, "selectors": sels})
            users.append(part.users)
            verdicts.append(alignment.missing(mapping, target, topology) if topology.policy != "none" else ("none", ""))
        findings += [
            Finding(d.path, d.legacy, "translated", f"DRA request for DeviceClass {mapping.device_class}") for d in ds
        ]
    for req, name in zip(requests, unique_labels(owners), strict=True):
        req["name"] = name
    return requests, users, verdicts, frozenset(by_resource)
