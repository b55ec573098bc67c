"""Why a pod stays on the device plugin: every such rule, each a small named check.

Each check looks at one thing and returns the finding that keeps the pod (or one value of it)
legacy, with outcome ``kept-legacy`` or ``unsupported`` (severity 3, which forbids rewriting
the pod), or None when the rule does not apply. The plan, the workload converter and the
cluster-state rules call them; nothing else decides that a pod stays legacy, apart from two
families of findings that come with their inputs' parsing: fields of the wrong JSON type
(:func:`translate.plan.field_types.shape_problems`) and GPU node labels that cannot become a
selector (:mod:`translate.plan.gfd_selectors`).

One shape for the rules of a pod: a check takes one :class:`Facts` (everything it may read:
the pod's spec and annotations, its legacy requests, the options, the findings so far and, for a
rule about one request, that request) and returns a finding or None. The plan runs
:data:`GATES` first (:func:`gate`: the first hit leaves the pod unchanged), then
:data:`CHECKS` (:func:`checks`: every hit is kept, and the verdict decides), per request
:data:`REQUEST_CHECKS` (:func:`request_check`: the first hit keeps that request legacy), and last
the verdict :func:`translation_not_faithful`. A new rule is a function and a line in one of
the lists.

Per value, while the requests are read (``translate.plan.demand``, before there are facts):
    :func:`requests_without_limits`, :func:`invalid_quantity`, :func:`requests_differ_from_limits`
Per request (:data:`REQUEST_CHECKS`):
    :func:`hami_slicing_kept`, :func:`shared_count_over_one`, :func:`shared_product_count_over_one`
Per pod: :data:`GATES` :func:`converted_before`, :func:`half_migrated`, :func:`too_many_devices`; :data:`CHECKS`
    :func:`pinned_to_node`, :func:`scheduler_without_dra`; the verdict
    :func:`translation_not_faithful` (any finding above, or a partial one under
    keep-legacy-partial); :func:`live_pod` (a Pod object, before planning it)
Cluster state (the webhook, after the plan), selected by their :data:`CLUSTER_STATE` codes:
    :func:`daemonset_node_not_handed_over`, :func:`legacy_quota_only`,
    :func:`bridge_class_quota_only`, :func:`quota_not_known`
Not the migration's (:mod:`translate.plan.foreign`, in the same shape):
    ``unknown_device_resource`` (per value), ``other_gpu_controller`` (per pod),
    ``controller_scheduler_without_dra`` (per workload)

Where a front-end setting would convert the pod, the finding carries a
:class:`~translate.findings.Remedy` code; the front end says it in its own words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dra_bridge.translate.errors import CountError
from dra_bridge.translate.findings import QUOTA_CLASS_NOT_COUNTED, Finding, Remedy, blocks_conversion, worst
from dra_bridge.translate.names import CONVERSION_ANNOTATION, NODE_MODE_LABEL
from dra_bridge.translate.plan.device_counts import parse_count
from dra_bridge.translate.plan.options import Options

if TYPE_CHECKING:
    from dra_bridge.translate.plan.demand import ContainerDemand
    from dra_bridge.translate.plan.placement import Placement

#: More devices than this in one pod is a typo or an attack, not a workload: refused.
MAX_DEVICES_PER_POD = 256
#: Schedulers known to support DRA without being declared.
DEFAULT_SCHEDULERS = ("", "default-scheduler")
#: The codes of the cluster-state findings (``Finding.code``): a front end selects them by these.
DAEMONSET_NODE = "daemonset-node-not-handed-over"
LEGACY_QUOTA_ONLY = "legacy-quota-only"
QUOTA_NOT_KNOWN = "quota-not-known"
QUOTA_CHARGED_AT_CLAIM = "quota-charged-at-claim"
LEGACY_QUOTA_LIFTED = "legacy-quota-lifted"
QUOTA_VIEW_UNKNOWN = "quota-view-unknown"
CLUSTER_STATE = frozenset(
    {
        DAEMONSET_NODE,
        LEGACY_QUOTA_ONLY,
        QUOTA_NOT_KNOWN,
        QUOTA_CHARGED_AT_CLAIM,
        LEGACY_QUOTA_LIFTED,
        QUOTA_VIEW_UNKNOWN,
        QUOTA_CLASS_NOT_COUNTED,
    }
)


@dataclass(frozen=True)
class Facts:
    """What a stay-legacy check may read about one pod: its ``spec`` and ``annotations``, the
    legacy requests with a count (``demands``), the plan ``options``, the ``path`` prefix of its
    findings (``spec.template.`` in a Deployment), the ``findings`` so far, the pod's GPU node
    selection as device selectors (``placement``: set for the request checks, None for gates and
    checks, which run before it is read), and for a check of one request that
    ``demand`` (:meth:`of`)."""

    spec: Mapping[str, Any]
    annotations: Mapping[str, Any]
    demands: tuple[ContainerDemand, ...]
    options: Options
    path: str = ""
    findings: tuple[Finding, ...] = ()
    demand: ContainerDemand | None = None
    placement: Placement | None = None

    def of(self, demand: ContainerDemand) -> Facts:
        """These facts, about one request."""
        return self._but(demand=demand)

    def adding(self, findings: Sequence[Finding]) -> Facts:
        """These facts with ``findings`` (all so far)."""
        return self._but(findings=tuple(findings))

    def placed(self, placement: Placement) -> Facts:
        """These facts with the pod's GPU node selection read (for the request checks)."""
        return self._but(placement=placement)

    def _but(self, **changes: Any) -> Facts:
        # dataclasses.replace without its field-by-field walk (called several times per pod):
        # the fields are plain values, nothing to validate or derive.
        new = object.__new__(Facts)
        vars(new).update(vars(self), **changes)
        return new


#: A stay-legacy rule: facts in, the finding that keeps the pod (or the request) legacy or None out.
Check = Callable[[Facts], Finding | None]

# ------------------------------------------------------------------ per value


def requests_without_limits(name: str, limits: Mapping[str, Any], path: str, legacy: str) -> Finding | None:
    """An extended resource in requests only: an invalid pod that the API server rejects."""
    if name in limits:
        return None
    return Finding(
        path,
        legacy,
        "unsupported",
        "an extended resource in requests without limits is an invalid pod (the API server rejects it): left unchanged",
    )


def invalid_quantity(value: object, path: str, legacy: str) -> Finding | None:
    """A count that is not a non-negative whole number."""
    try:
        parse_count(value)
    except CountError as exc:
        return Finding(path, legacy, "unsupported", f"invalid quantity: {exc}")
    return None


def requests_differ_from_limits(
    name: str, limits: Mapping[str, Any], requests: Mapping[str, Any], path: str, legacy: str
) -> Finding | None:
    """Requests that differ from limits, which extended resources forbid (both must parse)."""
    if name not in requests or parse_count(requests[name]) == parse_count(limits[name]):
        return None
    return Finding(
        path, legacy, "unsupported", "requests differ from limits, which extended resources forbid: left unchanged"
    )


def hami_slicing_kept(facts: Facts) -> Finding | None:
    """HAMi memory/core slicing has no DRA form: legacy, unless converted to whole devices."""
    d = facts.demand
    if d is None or d.mapping.kind != "slicing" or facts.options.hami_slicing == "whole-devices":
        return None
    return Finding(
        d.path, d.legacy, "unsupported", f"{d.mapping.reason}: the pod stays legacy", Remedy.HAMI_WHOLE_DEVICES
    )


def shared_count_over_one(facts: Facts) -> Finding | None:
    """A shared GPU whose device plugin fails requests greater than one (its sharing config's
    ``failRequestsGreaterThanOne``, NVIDIA/k8s-device-plugin README.md: the pod gets UnexpectedAdmissionError)
    stays as it is: a claim would give it what the plugin refused. Set on the catalog entry
    (a user catalog's own entries) or by the front end's option (with its remedy code), for
    every shared resource."""
    d = facts.demand
    if d is None:
        return None
    mapping, by_option = d.mapping, facts.options.fail_requests_greater_than_one
    if mapping.kind != "shared" or d.count <= 1 or not (mapping.fail_requests_greater_than_one or by_option):
        return None
    return Finding(
        d.path,
        d.legacy,
        "unsupported",
        "the device plugin fails shared requests greater than one (failRequestsGreaterThanOne): the pod stays as it is",
        None if mapping.fail_requests_greater_than_one else Remedy.FAIL_REQUESTS_GREATER_THAN_ONE,
    )


def shared_product_count_over_one(facts: Facts) -> Finding | None:
    """A plain ``nvidia.com/gpu`` greater than one on nodes whose ``gpu.product`` ends in
    ``-SHARED`` (time-slicing without renaming) asks for replicas, which a device plugin with
    ``failRequestsGreaterThanOne`` fails: such a pod stays as it is, as for a shared resource."""
    d, placement = facts.demand, facts.placement
    if (
        d is None
        or placement is None
        or not placement.shared_products
        or not facts.options.fail_requests_greater_than_one
    ):
        return None
    if d.mapping.kind != "gpu" or d.mapping.gfd != "nvidia" or d.count <= 1:
        return None
    return Finding(
        d.path,
        d.legacy,
        "unsupported",
        f"the pod's nodes share each GPU by time-slicing ({placement.shared_products[0]}) and the device plugin "
        "fails requests greater than one there (failRequestsGreaterThanOne): the pod stays as it is",
        Remedy.FAIL_REQUESTS_GREATER_THAN_ONE,
    )


# ------------------------------------------------------------------ per pod


def converted_before(facts: Facts) -> Finding | None:
    """A converted pod that asks for legacy devices again would hold them twice."""
    if CONVERSION_ANNOTATION not in facts.annotations:
        return None
    return Finding(
        f"{facts.path}metadata.annotations[{CONVERSION_ANNOTATION}]",
        "",
        "kept-legacy",
        "converted before, yet asks for legacy devices again (they would be held twice): re-convert "
        "the original, or drop the annotation and claims",
    )


def half_migrated(facts: Facts) -> Finding | None:
    """A pod that already has DRA claims (``spec.resourceClaims``) and a legacy request too was
    half-migrated by hand: converting it would add a second claim beside the first, without a
    word. Kept unchanged with a warning, unless the options say convert it anyway."""
    claims = facts.spec.get("resourceClaims")
    if not isinstance(claims, list) or not claims or facts.options.convert_half_migrated:
        return None
    names = ", ".join(str(c.get("name", "?")) if isinstance(c, Mapping) else "?" for c in claims)
    return Finding(
        f"{facts.path}spec.resourceClaims",
        names,
        "kept-legacy",
        "the pod already has DRA claims besides a legacy device request (half-migrated by hand, or claims "
        "for other devices such as a NIC?): converting adds a claim for the legacy request beside them; "
        "left unchanged",
        Remedy.CONVERT_HALF_MIGRATED,
    )


def too_many_devices(facts: Facts) -> Finding | None:
    """More than MAX_DEVICES_PER_POD devices (the path: the first request's); slicing requests
    (memory, cores) count no devices."""
    total = sum(d.count for d in facts.demands if d.mapping.kind != "slicing")
    if total <= MAX_DEVICES_PER_POD or not facts.demands:
        return None
    return Finding(
        facts.demands[0].path, f"{total} devices", "unsupported", f"more than {MAX_DEVICES_PER_POD} devices in one pod"
    )


def pinned_to_node(facts: Facts) -> Finding | None:
    """``spec.nodeName`` skips the scheduler, so no claim of the pod could ever be allocated."""
    if not facts.spec.get("nodeName"):
        return None
    return Finding(
        f"{facts.path}spec.nodeName",
        str(facts.spec["nodeName"]),
        "kept-legacy",
        "a pod with spec.nodeName skips the scheduler, so its claims could never be allocated: it stays "
        "on the device plugin",
    )


def scheduler_without_dra(facts: Facts) -> Finding | None:
    """A scheduler other than the default one, not declared to support DRA."""
    scheduler = str(facts.spec.get("schedulerName") or "")
    if scheduler in DEFAULT_SCHEDULERS or scheduler in facts.options.dra_schedulers:
        return None
    return Finding(
        f"{facts.path}spec.schedulerName",
        scheduler,
        "kept-legacy",
        f"scheduler {scheduler!r} may not support DRA: the pod stays on the device plugin",
        Remedy.DECLARE_DRA_SCHEDULER,
        scheduler,
    )


def translation_not_faithful(facts: Facts) -> Finding | None:
    """The pod-level verdict: a finding so far forbids rewriting the pod, or policy keeps partial ones legacy."""
    findings = facts.findings
    if not blocks_conversion(findings) and not (facts.options.keep_legacy_partial and worst(findings) >= 2):
        return None
    return Finding(
        facts.path.removesuffix(".") or ".",  # the pod template itself: ``spec.template``, or ``.`` for a Pod
        "",
        "kept-legacy",
        "kept on the device plugin: a finding above forbids a faithful translation",
    )


def live_pod(meta: Mapping[str, Any]) -> Finding | None:
    """A Pod that exists (uid: read back from the API server, e.g. ``kubectl get -o yaml``) or has
    an owner cannot change its spec: convert the owner. Checked before every other rule, so a
    running pod's ``spec.nodeName`` (set by the scheduler) is not given as the reason."""
    if not (meta.get("uid") or meta.get("ownerReferences")):
        return None
    what = "a live Pod (read back from the API server)" if meta.get("uid") else "a controller-owned Pod"
    return Finding(
        ".",
        f"Pod {meta.get('name', '')}",
        "kept-legacy",
        f"{what} cannot change its spec: convert its owner (Deployment, Job, ...) instead, or the "
        "manifest it was created from",
    )


#: The first hit leaves the pod unchanged (its findings so far and the gate's).
GATES: tuple[Check, ...] = (converted_before, half_migrated, too_many_devices)
#: Every hit is kept; one of severity 3 keeps the pod legacy (the verdict).
CHECKS: tuple[Check, ...] = (pinned_to_node, scheduler_without_dra)
#: Per request (``facts.demand``): the first hit keeps that request, and so the pod, legacy.
REQUEST_CHECKS: tuple[Check, ...] = (hami_slicing_kept, shared_count_over_one, shared_product_count_over_one)


def _first(rules: tuple[Check, ...], facts: Facts) -> Finding | None:
    for rule in rules:
        found = rule(facts)
        if found is not None:
            return found
    return None


def gate(facts: Facts) -> Finding | None:
    """The first of :data:`GATES` that hits (the pod stays unchanged), or None."""
    return _first(GATES, facts)


def checks(facts: Facts) -> list[Finding]:
    """Every finding of :data:`CHECKS`."""
    return [f for f in (c(facts) for c in CHECKS) if f is not None]


def request_check(facts: Facts) -> Finding | None:
    """The first of :data:`REQUEST_CHECKS` that hits for ``facts.demand``, or None."""
    return _first(REQUEST_CHECKS, facts)


# ------------------------------------------------------------------ cluster state


def daemonset_node_not_handed_over(
    owner_kind: str, node: str | None, node_mode: Callable[[str], str | None]
) -> Finding | None:
    """A DaemonSet pod converts only once its node is handed over to DRA (docs/design.md D6)."""
    if owner_kind != "DaemonSet":
        return None
    if node and node_mode(node) == "dra":
        return None
    return Finding(
        "(daemonset)",
        node or "",
        "kept-legacy",
        f"DaemonSet pod for node {node or '?'}: converted only once that node is handed over to DRA "
        f"({NODE_MODE_LABEL}=dra)",
        code=DAEMONSET_NODE,
    )


def legacy_quota_only(
    resource: str, legacy_keys: Sequence[str], dra_key: str, quota_keys: frozenset[str], ignore_legacy_quota: bool
) -> Finding | None:
    """A ResourceQuota limits the legacy resource but not the DRA class key: converting would lift it."""
    if not legacy_keys or dra_key in quota_keys or ignore_legacy_quota:
        return None
    return Finding(
        "(quota)",
        resource,
        "kept-legacy",
        f"a ResourceQuota limits {sorted(legacy_keys)[0]} but not {dra_key}: converting would lift the limit",
        Remedy.IGNORE_LEGACY_QUOTA,
        dra_key,
        code=LEGACY_QUOTA_ONLY,
    )


def bridge_class_quota_only(
    resource: str, bridge_key: str, target_key: str, quota_keys: frozenset[str], ignore_legacy_quota: bool
) -> Finding | None:
    """A ResourceQuota counts our bridge class but not the class the target writes (the vendor's
    own, after ``target: vendor``): the new claims would go uncounted (docs/design.md D27)."""
    if bridge_key == target_key or bridge_key not in quota_keys or target_key in quota_keys or ignore_legacy_quota:
        return None
    return Finding(
        "(quota)",
        resource,
        "kept-legacy",
        f"a ResourceQuota counts {bridge_key} but not {target_key}, the class new claims name: "
        f"converted pods would not count against it (add {target_key} to the quota)",
        Remedy.IGNORE_LEGACY_QUOTA,
        target_key,
        code=QUOTA_CLASS_NOT_COUNTED,
    )


def quota_not_known(resources: Sequence[str], cause: str, ignore_legacy_quota: bool) -> Finding | None:
    """The namespace's ResourceQuotas are not known (the front end's view of them has not synced:
    ``cause`` says why, e.g. a missing permission): converting could lift a limit on a legacy
    resource that was never seen, so the whole pod stays legacy (quota safety fails closed)."""
    if not resources or ignore_legacy_quota:
        return None
    return Finding(
        "(quota-view)",
        ", ".join(sorted(resources)),
        "kept-legacy",
        f"this namespace's ResourceQuotas are not known yet ({cause}): converting could lift a limit on "
        "the legacy resource",
        Remedy.IGNORE_LEGACY_QUOTA,
        code=QUOTA_NOT_KNOWN,
    )
