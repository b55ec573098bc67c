"""The path each workload can take to DRA, and when KEP-5004's extended-resource mapping serves it.

    kep5004_classes(device_classes) -> {extended resource name: DeviceClass}
    kep5004_blockers(pod, demands, classes, mapping_off) -> [why it does not apply]   (empty: it applies)
    choose_path(demands, findings, blockers, classes) -> PathVerdict
    enrolled_path(verdict, enrolment) -> PathVerdict     ``not-enrolled`` where the webhook never looks

Paths, in the order they are decided (:data:`PATH_RULES`; each path agrees with the outcomes
of its row of :data:`PATH_OUTCOMES`):

``blocked`` (refused)
    an ``unsupported`` finding: the request cannot move (an invalid pod such as an extended
    resource in requests only, an invalid quantity, a value with no DRA form), even when no
    count could be read from it.
``nothing-to-do``
    no legacy device request with a count above zero (already DRA, or no GPU at all), and none
    left for the webhook outside a pod template (an Argo template's container, a TrainJob's
    ``resourcesPerNode``: those need conversion, by the webhook).
``kep-5004``
    served as it is by the cluster's own extended-resource mapping (KEP-5004, the
    ``DRAExtendedResource`` gate: on by default from 1.36, :mod:`translate.report.served`): a
    DeviceClass with ``spec.extendedResourceName`` names every legacy resource the pod asks for,
    and nothing in the pod depends on what the mapping loses. The node hand-over is still
    needed: the scheduler sends a resource to DRA only on nodes whose allocatable for it is 0
    or absent and where a DRA driver serves the class (kube-scheduler's DynamicResources
    plugin). One DeviceClass wins a name: the newest (``creationTimestamp``, then name), as the
    scheduler's class mapping keeps the newest.
``blocked``
    the plan keeps the pod on the device plugin (a ``kept-legacy`` finding) and KEP-5004 does
    not serve it: why, from those findings. Decided first of all when the pod asks for an
    accelerator resource the catalog does not know (``unknown-device-resource``: the remedy names
    the catalog entry to add) or another GPU controller owns it (``other-gpu-controller``), with or
    without a catalogued request; other extended resources (``other-extended-resource``) never block.
``needs-conversion``
    ``convert`` rewrites it (``via: convert``), or the webhook converts its pods
    (``via: webhook``: DaemonSets, custom resources, Argo templates).
``not-enrolled``
    it would need conversion, but the webhook never sees its namespace's pods
    (:mod:`translate.enrolment`: kube-system, the release namespace, the opt-out label, a
    namespace no entry's namespaceSelector selects, pod templates the objectSelector excludes):
    they stay on the device plugin. The reason names what would enrol it.

What the mapping loses (each a blocker): GFD node selectors and affinity (its per-pod claim
has no device selector), MIG and shared (time-slicing) names and HAMi slicing (its claim asks
for whole devices of the class), HAMi annotations, and init containers: kube-scheduler's
``createDeviceRequests`` (pkg/scheduler/framework/plugins/dynamicresources, 1.34-1.36) makes
one device request per container *and init container* with that container's count, so a
pod whose init container asks for the resource holds init + app devices at once, where the
legacy path reused the app containers' devices (max of init and app). Pods the scheduler does
not place (``spec.nodeName``, another scheduler) never get the mapping's claim.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dra_bridge.translate.enrolment import Enrolment
from dra_bridge.translate.findings import FOREIGN_CODES, Finding, worst
from dra_bridge.translate.names import GFD_PREFIX, HAMI_ANNOTATIONS
from dra_bridge.translate.plan.demand import ContainerDemand

PathName = Literal["nothing-to-do", "kep-5004", "needs-conversion", "not-enrolled", "blocked"]
PATHS: tuple[PathName, ...] = ("nothing-to-do", "kep-5004", "needs-conversion", "not-enrolled", "blocked")


@dataclass(frozen=True)
class PathVerdict:
    """``path``, how (``via``: ``convert``, ``webhook``, ``node hand-over`` or "") and why."""

    path: PathName
    via: str
    reason: str


def kep5004_classes(device_classes: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Extended resource name -> the DeviceClass that serves it: of the classes naming it in
    ``spec.extendedResourceName``, the newest by ``metadata.creationTimestamp`` (RFC 3339 text
    compares in time order), then the greatest name."""
    best: dict[str, tuple[str, str]] = {}
    for dc in device_classes:
        spec = dc.get("spec") if isinstance(dc.get("spec"), Mapping) else {}
        meta = dc.get("metadata") if isinstance(dc.get("metadata"), Mapping) else {}
        resource = spec.get("extendedResourceName") if isinstance(spec, Mapping) else None
        if not isinstance(resource, str) or not isinstance(meta, Mapping):
            continue
        rank = (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))
        if resource not in best or rank > best[resource]:
            best[resource] = rank
    return {resource: name for resource, (_, name) in best.items()}


def _gpu_placement(spec: Mapping[str, Any]) -> str:
    selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), Mapping) else {}
    keys = [k for k in selector or {} if str(k).startswith(GFD_PREFIX)]
    if keys:
        return f"nodeSelector {', '.join(sorted(keys))}"
    return "node affinity on GFD labels" if f'"{GFD_PREFIX}' in json.dumps(spec.get("affinity"), default=str) else ""


def kep5004_blockers(
    pod: Mapping[str, Any], demands: Sequence[ContainerDemand], classes: Mapping[str, str], mapping_off: str
) -> list[str]:
    """Why KEP-5004's mapping does not serve this pod as it is (empty: it does); see the module
    docstring. ``demands``: the pod's legacy demands with a count above zero; ``mapping_off``:
    why the cluster's mapping is off (DRAExtendedResource: :meth:`ClusterFeatures.mapping_off`),
    empty when it is on."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    meta = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
    assert isinstance(spec, Mapping) and isinstance(meta, Mapping)
    out: list[str] = []
    if mapping_off:
        out.append(mapping_off)
    missing = sorted({d.mapping.resource_name for d in demands} - set(classes))
    if missing:
        out.append(f"no DeviceClass has extendedResourceName {', '.join(missing)}")
    for d in demands:
        if d.mapping.kind in ("mig", "shared", "slicing") or d.mapping.profile is not None:
            out.append(
                f"{d.mapping.resource_name} is a {d.mapping.kind} name: the mapping's claim asks for whole "
                "devices of the class"
            )
            break
    placement = _gpu_placement(spec)
    if placement:
        out.append(f"the pod selects GPUs by {placement}: the mapping's claim has no device selector")
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), Mapping) else {}
    hami = sorted(a for a in annotations or {} if a in HAMI_ANNOTATIONS)
    if hami:
        out.append(f"HAMi annotation {', '.join(hami)} would be ignored")
    inits = [d for d in demands if d.role == "init"]
    if inits:
        held = sum(d.count for d in demands)
        out.append(
            f"init container {inits[0].container!r} asks for {inits[0].mapping.resource_name}: the "
            f"scheduler's claim (createDeviceRequests) gives every init container its own devices, {held} "
            "in all, where the device plugin reused the app containers'"
        )
    if spec.get("nodeName"):
        out.append("spec.nodeName bypasses the scheduler, which creates the mapping's claim")
    scheduler = spec.get("schedulerName")
    if scheduler and scheduler != "default-scheduler":
        out.append(f"schedulerName {scheduler} is not kube-scheduler")
    return out


@dataclass(frozen=True)
class PathFacts:
    """What a path rule reads: the legacy ``demands`` with a count above zero, the plan's
    ``findings`` (convert's), why KEP-5004 does not serve the pod (``blockers``) and the
    cluster's extended-resource classes (``classes``)."""

    demands: Sequence[ContainerDemand]
    findings: Sequence[Finding]
    blockers: Sequence[str]
    classes: Mapping[str, str]

    def kep_note(self) -> str:
        """Why KEP-5004 does not serve it, when the cluster maps some extended resource."""
        return f"; KEP-5004 does not serve it: {'; '.join(self.blockers)}" if self.classes and self.blockers else ""


def _reasons(findings: Sequence[Finding], outcomes: Sequence[str]) -> str:
    return "; ".join(dict.fromkeys(f.reason for f in findings if f.outcome in outcomes))


def _foreign(facts: PathFacts) -> PathVerdict | None:
    """A device request the migration does not own: an accelerator resource outside the catalog,
    or a pod another GPU controller owns (blocked before anything else, with or without a
    catalogued request)."""
    why = "; ".join(dict.fromkeys(f.reason for f in facts.findings if f.code in FOREIGN_CODES))
    return PathVerdict("blocked", "", why) if why else None


def _refused(facts: PathFacts) -> PathVerdict | None:
    """An ``unsupported`` finding: the request cannot move (an invalid pod, a value with no DRA
    form), whether or not a count was read from it."""
    why = _reasons(facts.findings, ("unsupported",))
    return PathVerdict("blocked", "", why + facts.kep_note()) if why else None


def _no_request(facts: PathFacts) -> PathVerdict | None:
    if facts.demands or any(f.outcome == "left-for-webhook" for f in facts.findings):
        return None
    zero = " (zero counts are dropped)" if any(f.outcome == "translated" for f in facts.findings) else ""
    return PathVerdict("nothing-to-do", "", f"no legacy device request{zero}")


def _kep5004(facts: PathFacts) -> PathVerdict | None:
    if facts.blockers or not facts.demands:  # no demand read: a request outside any pod template
        return None
    resources = sorted({d.mapping.resource_name for d in facts.demands})
    served = ", ".join(f"{r} by DeviceClass {facts.classes[r]}" for r in resources)
    return PathVerdict(
        "kep-5004",
        "node hand-over",
        f"served as it is ({served}) once its nodes are handed over: the scheduler uses the "
        "mapping only on nodes whose allocatable for the resource is 0 or absent and where a "
        "DRA driver serves the class",
    )


def _kept_legacy(facts: PathFacts) -> PathVerdict | None:
    why = _reasons(facts.findings, ("kept-legacy",))
    return PathVerdict("blocked", "", why + facts.kep_note()) if why else None


def _converts(facts: PathFacts) -> PathVerdict:
    findings = facts.findings
    via = "webhook" if any(f.outcome == "left-for-webhook" for f in findings) else "convert"
    worst_findings = [f for f in findings if f.severity == worst(findings)] if findings else []
    why = worst_findings[0].reason if worst_findings and worst(findings) > 0 else "converts cleanly"
    return PathVerdict("needs-conversion", via, why + facts.kep_note())


#: The path rules in the order they are decided: the first that answers is the path (see the
#: module docstring). A new path is a rule here and a row of :data:`PATH_OUTCOMES`.
PATH_RULES: tuple[Callable[[PathFacts], PathVerdict | None], ...] = (
    _foreign,
    _refused,
    _no_request,
    _kep5004,
    _kept_legacy,
)
#: The outcomes (:attr:`WorkloadReport.outcome`) each path agrees with: a workload whose outcome
#: is not in its path's row contradicts itself (tests/migrate/test_report_verdict.py checks).
PATH_OUTCOMES: dict[str, frozenset[str]] = {
    "nothing-to-do": frozenset({"unchanged", "ignored", "translated"}),  # translated: a zero count dropped
    "kep-5004": frozenset({"translated", "left-for-webhook", "partial", "kept-legacy"}),  # stays legacy
    "needs-conversion": frozenset({"translated", "left-for-webhook", "partial"}),
    "blocked": frozenset({"kept-legacy", "unsupported"}),
    "not-enrolled": frozenset({"translated", "left-for-webhook", "partial"}),  # needs conversion, never seen
}


def choose_path(
    demands: Sequence[ContainerDemand], findings: Sequence[Finding], blockers: Sequence[str], classes: Mapping[str, str]
) -> PathVerdict:
    """The path of one planned workload (see the module docstring): the first of
    :data:`PATH_RULES` that answers, else ``needs-conversion``. ``demands``: legacy demands
    with a count above zero; ``findings``: the plan's (convert's, phrased)."""
    facts = PathFacts(demands, findings, blockers, classes)
    for rule in PATH_RULES:
        verdict = rule(facts)
        if verdict is not None:
            return verdict
    return _converts(facts)


def enrolled_path(verdict: PathVerdict, enrolment: Enrolment) -> PathVerdict:
    """``verdict``, or ``not-enrolled`` when it needs conversion and the webhook never sees the
    namespace's pods (``enrolment`` known and no path); enrolment not known leaves it as it is."""
    if verdict.path != "needs-conversion" or not enrolment.known or enrolment.enrolled:
        return verdict
    how = f": {enrolment.enrol_with} to enrol it" if enrolment.enrol_with else ""
    return PathVerdict(
        "not-enrolled",
        "",
        f"{enrolment.reason}{how}; its pods stay on the device plugin (the plan: {verdict.reason})",
    )
