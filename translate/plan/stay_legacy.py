"""Why a pod stays on the device plugin: every such rule, each a small named check.

Each check looks at one thing and returns the finding that keeps the pod (or one value of it)
legacy, with outcome ``kept-legacy`` or ``unsupported`` (severity 3, which forbids rewriting
the pod), or None when the rule does not apply. The plan, the workload converter and the
cluster-state rules call them; nothing else decides that a pod stays legacy, apart from two
families of findings that come with their inputs' parsing: fields of the wrong JSON type
(:func:`translate.plan.field_types.shape_problems`) and GPU node labels that cannot become a
selector (:mod:`translate.plan.gfd_selectors`).

Per value (a container's request):
    :func:`requests_without_limits`, :func:`invalid_quantity`, :func:`requests_differ_from_limits`,
    :func:`hami_slicing_kept`, :func:`shared_count_over_one`
Per pod:
    :func:`converted_before`, :func:`too_many_devices`, :func:`pinned_to_node`,
    :func:`scheduler_without_dra`, :func:`translation_not_faithful` (any finding above, or a
    partial one under keep-legacy-partial), :func:`live_pod`
Cluster state (the webhook):
    :func:`daemonset_node_not_handed_over`, :func:`legacy_quota_only`, :func:`bridge_class_quota_only`,
    :func:`quota_not_known`

Where a front-end setting would convert the pod, the finding carries a
:class:`~translate.findings.Remedy` code; the front end says it in its own words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dra_bridge.translate.catalog import ResourceMapping
from dra_bridge.translate.errors import CountError
from dra_bridge.translate.findings import QUOTA_CLASS_NOT_COUNTED, Finding, Remedy, blocks_conversion, worst
from dra_bridge.translate.names import CONVERSION_ANNOTATION, NODE_MODE_LABEL
from dra_bridge.translate.plan.device_counts import parse_count

#: More devices than this in one pod is a typo or an attack, not a workload: refused.
MAX_DEVICES_PER_POD = 256
#: Schedulers known to support DRA without being declared.
DEFAULT_SCHEDULERS = ("", "default-scheduler")

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


def hami_slicing_kept(mapping: ResourceMapping, whole_devices: bool, path: str, legacy: str) -> Finding | None:
    """HAMi memory/core slicing has no DRA form: legacy, unless converted to whole devices."""
    if mapping.kind != "slicing" or whole_devices:
        return None
    return Finding(path, legacy, "unsupported", f"{mapping.reason}: the pod stays legacy", Remedy.HAMI_WHOLE_DEVICES)


def shared_count_over_one(
    mapping: ResourceMapping, count: int, fail_by_option: bool, path: str, legacy: str
) -> Finding | None:
    """A shared GPU whose device plugin fails requests greater than one (its sharing config's
    ``failRequestsGreaterThanOne``, NVIDIA/k8s-device-plugin README.md: the pod gets UnexpectedAdmissionError)
    stays as it is: a claim would give it what the plugin refused. Set on the catalog entry
    (a user catalog's own entries) or by the front end's option (``fail_by_option``, with its
    remedy code), for every shared resource."""
    if mapping.kind != "shared" or count <= 1 or not (mapping.fail_requests_greater_than_one or fail_by_option):
        return None
    return Finding(
        path,
        legacy,
        "unsupported",
        "the device plugin fails shared requests greater than one (failRequestsGreaterThanOne): the pod stays as it is",
        None if mapping.fail_requests_greater_than_one else Remedy.FAIL_REQUESTS_GREATER_THAN_ONE,
    )


# ------------------------------------------------------------------ per pod


def converted_before(annotations: Mapping[str, Any], path: str) -> Finding | None:
    """A converted pod that asks for legacy devices again would hold them twice."""
    if CONVERSION_ANNOTATION not in annotations:
        return None
    return Finding(
        f"{path}metadata.annotations[{CONVERSION_ANNOTATION}]",
        "",
        "kept-legacy",
        "converted before, yet asks for legacy devices again (they would be held twice): re-convert "
        "the original, or drop the annotation and claims",
    )


def too_many_devices(total: int, path: str) -> Finding | None:
    """More than MAX_DEVICES_PER_POD devices (``path``: the first request's)."""
    if total <= MAX_DEVICES_PER_POD:
        return None
    return Finding(path, f"{total} devices", "unsupported", f"more than {MAX_DEVICES_PER_POD} devices in one pod")


def pinned_to_node(spec: Mapping[str, Any], path: str) -> Finding | None:
    """``spec.nodeName`` skips the scheduler, so no claim of the pod could ever be allocated."""
    if not spec.get("nodeName"):
        return None
    return Finding(
        f"{path}spec.nodeName",
        str(spec["nodeName"]),
        "kept-legacy",
        "a pod with spec.nodeName skips the scheduler, so its claims could never be allocated: it stays "
        "on the device plugin",
    )


def scheduler_without_dra(spec: Mapping[str, Any], dra_schedulers: Sequence[str], path: str) -> Finding | None:
    """A scheduler other than the default one, not declared to support DRA."""
    scheduler = str(spec.get("schedulerName") or "")
    if scheduler in DEFAULT_SCHEDULERS or scheduler in dra_schedulers:
        return None
    return Finding(
        f"{path}spec.schedulerName",
        scheduler,
        "kept-legacy",
        f"scheduler {scheduler!r} may not support DRA: the pod stays on the device plugin",
        Remedy.DECLARE_DRA_SCHEDULER,
        scheduler,
    )


def translation_not_faithful(findings: Sequence[Finding], keep_legacy_partial: bool, path: str) -> Finding | None:
    """The pod-level verdict: a finding forbids rewriting the pod, or policy keeps partial ones legacy."""
    if not blocks_conversion(findings) and not (keep_legacy_partial and worst(findings) >= 2):
        return None
    return Finding(
        path or ".", "", "kept-legacy", "kept on the device plugin: a finding above forbids a faithful translation"
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
    )
