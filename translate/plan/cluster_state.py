"""Migration rules that depend on cluster state (pure: the facts are passed in).

The webhook feeds these from its watch caches (:func:`held_back`, one pod); ``dra-migrate
convert`` and ``report`` from the ResourceQuotas of their input (:func:`namespace_quota_keys`,
:func:`hold_for_quota`, a whole object); tests feed them directly.

- A DaemonSet pod is pinned to one node (``matchFields metadata.name In [node]``) and is
  converted only once that node is handed over to DRA (``dra-bridge.io/mode=dra``,
  docs/design.md D6): elsewhere the device plugin still owns the devices.
- Quota safety: where a ResourceQuota limits the legacy resource (``requests.<name>``) but
  not the DRA class key (``<class>.deviceclass.resource.k8s.io/devices``: KEP-4381 quota),
  converting would silently lift the limit, so the pod stays legacy unless the front end is
  told to ignore legacy quota (:attr:`~translate.findings.Remedy.IGNORE_LEGACY_QUOTA`). Where
  both exist: DRA quota is charged when the claim is created, so an over-quota pod now waits
  Pending instead of being refused.
- Quota on the wrong class (docs/design.md D27): where a ResourceQuota counts our bridge class
  (``<ours>.deviceclass.resource.k8s.io/devices``) but not the class the catalog's target writes
  (the vendor's, once ``target: vendor``), new claims would go uncounted: the pod stays legacy
  (:func:`translate.plan.stay_legacy.bridge_class_quota_only`), with the same waiver.
- Quota safety fails closed: where the front end does not know a namespace's quotas yet
  (:class:`QuotaUnknown`: its view has not synced, e.g. RBAC refuses ``list resourcequotas``
  or the list has not answered), the pod stays legacy as a whole
  (:func:`translate.plan.stay_legacy.quota_not_known`), unless legacy quota is ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.errors import RecordError
from dra_bridge.translate.findings import Finding, Remedy
from dra_bridge.translate.json_copy import clone
from dra_bridge.translate.names import CONVERSION_ANNOTATION
from dra_bridge.translate.plan.quota import dra_quota_key
from dra_bridge.translate.plan.record import ConversionRecord
from dra_bridge.translate.plan.stay_legacy import (
    LEGACY_QUOTA_LIFTED,
    QUOTA_CHARGED_AT_CLAIM,
    QUOTA_VIEW_UNKNOWN,
    bridge_class_quota_only,
    daemonset_node_not_handed_over,
    legacy_quota_only,
    quota_not_known,
)
from dra_bridge.translate.plan.workloads import Converted


@dataclass(frozen=True)
class QuotaUnknown:
    """A namespace's ResourceQuotas are not known; ``cause``: why, in a few words for a warning
    (e.g. ``missing permission list core/resourcequotas``)."""

    cause: str = "not listed yet"


#: What a front end knows of a namespace's quotas: the keys they limit, or that it does not know.
QuotaKeys = frozenset[str] | QuotaUnknown


def daemonset_node(spec: Mapping[str, Any]) -> str | None:
    """The node a DaemonSet pod is pinned to (``matchFields metadata.name In [node]``), or None."""
    try:
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for term in terms:
            for mf in term.get("matchFields") or []:
                if mf.get("key") == "metadata.name" and mf.get("operator") == "In" and len(mf.get("values")) == 1:
                    return str(mf["values"][0])
    except (KeyError, TypeError, AttributeError):
        return None
    return None


def converted_resources(pod: Mapping[str, Any]) -> set[str]:
    """The legacy resource names a converted pod's conversion record holds (none without one)."""
    record = ConversionRecord.read(pod)
    return set(record.resources) if record else set()


def class_not_counted(
    resource: str, catalog: Catalog, quota_keys: frozenset[str], ignore_legacy_quota: bool
) -> Finding | None:
    """The facts of :func:`~translate.plan.stay_legacy.bridge_class_quota_only` for one converted
    legacy resource: the quota key of our bridge class and of the class the catalog's target writes."""
    mapping, ours = catalog.lookup(resource), catalog.with_target("bridge").lookup(resource)
    if mapping is None or ours is None or mapping.kind == "slicing":
        return None
    return bridge_class_quota_only(
        resource, dra_quota_key(ours), dra_quota_key(mapping), quota_keys, ignore_legacy_quota
    )


def held_back(
    record: ConversionRecord | None,
    spec: Mapping[str, Any],
    owner_kind: str,
    node_mode: Callable[[str], str | None],
    quota_keys: QuotaKeys,
    catalog: Catalog,
    ignore_legacy_quota: bool = False,
) -> list[Finding]:
    """Cluster-state findings for a pod ``plan_pod`` converted with conversion ``record``
    (``Plan.record``: the resources it converted; None converts none).

    ``node_mode(node)`` gives a node's ``dra-bridge.io/mode`` label (None when unset);
    ``quota_keys`` are the keys any ResourceQuota in the pod's namespace limits (or
    :class:`QuotaUnknown`: the pod stays legacy, as a whole, unless ``ignore_legacy_quota``). A
    ``kept-legacy`` finding means the pod must be admitted unchanged. Each finding carries its
    code (:data:`~translate.plan.stay_legacy.CLUSTER_STATE`), by which a front end selects
    them; their paths start with ``(`` because they name cluster state, not a field of the pod.
    """
    out: list[Finding] = []
    converted = sorted(record.resources) if record else []
    pinned = daemonset_node_not_handed_over(
        owner_kind, daemonset_node(spec) if owner_kind == "DaemonSet" else None, node_mode
    )
    if pinned is not None:
        out.append(pinned)
    if isinstance(quota_keys, QuotaUnknown):
        resources = converted
        unknown = quota_not_known(resources, quota_keys.cause, ignore_legacy_quota)
        if unknown is None and resources:
            unknown = Finding(
                "(quota-view)",
                ", ".join(resources),
                "partial",
                f"converted without knowing this namespace's ResourceQuotas ({quota_keys.cause})",
                Remedy.IGNORE_LEGACY_QUOTA,
                code=QUOTA_VIEW_UNKNOWN,
            )
        return [*out, unknown] if unknown else out
    if not quota_keys:
        return out
    for resource in converted:
        mapping = catalog.lookup(resource)
        uncounted = class_not_counted(resource, catalog, quota_keys, ignore_legacy_quota)
        if uncounted is not None:
            out.append(uncounted)
            continue
        legacy_limited = sorted({f"requests.{resource}", resource} & quota_keys)
        if mapping is None or not legacy_limited:
            continue
        dra_key = dra_quota_key(mapping)
        lifted = legacy_quota_only(resource, legacy_limited, dra_key, quota_keys, ignore_legacy_quota)
        if lifted is not None:
            out.append(lifted)
        elif dra_key in quota_keys:
            out.append(
                Finding(
                    "(quota)",
                    resource,
                    "partial",
                    "DRA quota is charged when the claim is created: an over-quota pod now waits "
                    "Pending instead of being refused",
                    code=QUOTA_CHARGED_AT_CLAIM,
                )
            )
        else:
            out.append(
                Finding(
                    "(quota)",
                    resource,
                    "partial",
                    f"converted although no ResourceQuota limits {dra_key}: the legacy quota no longer "
                    "applies to this pod",
                    Remedy.IGNORE_LEGACY_QUOTA,
                    dra_key,
                    code=LEGACY_QUOTA_LIFTED,
                )
            )
    return out


def namespace_quota_keys(quotas: Iterable[Any]) -> dict[str, frozenset[str]]:
    """Namespace -> every key the ResourceQuotas there limit (``spec.hard``), from objects in a
    front end's input (not a ResourceQuota, or no ``spec.hard``: skipped)."""
    keys: dict[str, set[str]] = {}
    for q in quotas:
        if not isinstance(q, Mapping) or q.get("kind") != "ResourceQuota":
            continue
        meta, spec = q.get("metadata"), q.get("spec")
        hard = spec.get("hard") if isinstance(spec, Mapping) else None
        if not isinstance(hard, Mapping):
            continue
        namespace = str(meta.get("namespace") or "") if isinstance(meta, Mapping) else ""
        keys.setdefault(namespace, set()).update(str(k) for k in hard)
    return {ns: frozenset(k) for ns, k in keys.items()}


def quota_holes(
    resources: Iterable[str], quota_keys: frozenset[str], catalog: Catalog, ignore_legacy_quota: bool
) -> list[Finding]:
    """The ``kept-legacy`` findings of :func:`held_back`'s quota rules for converted ``resources``:
    a quota on our bridge class but not the target's, or on the legacy resource but not the class
    (docs/design.md D27). ``dra-migrate convert`` and ``report`` apply them to whole objects."""
    out: list[Finding] = []
    for resource in sorted(set(resources)):
        mapping = catalog.lookup(resource)
        if mapping is None or mapping.kind == "slicing":
            continue
        hole = class_not_counted(resource, catalog, quota_keys, ignore_legacy_quota) or legacy_quota_only(
            resource,
            sorted({f"requests.{resource}", resource} & quota_keys),
            dra_quota_key(mapping),
            quota_keys,
            ignore_legacy_quota,
        )
        if hole is not None:
            out.append(hole)
    return out


def _records(node: Any) -> set[str]:
    """Legacy resources of every conversion record in ``node`` (a workload, any depth)."""
    if isinstance(node, list):
        return {r for item in node for r in _records(item)}
    if not isinstance(node, Mapping):
        return set()
    meta = node.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    found: set[str] = set()
    if isinstance(annotations, Mapping) and CONVERSION_ANNOTATION in annotations:
        try:
            found = converted_resources(node)
        except RecordError:  # a record edited by hand: the plan's own findings say so
            found = set()
    return found | {r for key, value in node.items() if key != "metadata" for r in _records(value)}


def hold_for_quota(
    obj: Any, converted: Converted, quota_keys: frozenset[str], catalog: Catalog, ignore_legacy_quota: bool
) -> Converted:
    """``converted`` (the plan of ``obj``), or ``obj`` unchanged with the quota holes added to the
    findings where :func:`quota_holes` keeps what it converts legacy (as the webhook would)."""
    if not quota_keys:
        return converted
    new = _records(converted.obj) - _records(obj)
    holes = quota_holes(new, quota_keys, catalog, ignore_legacy_quota)
    if not holes:
        return converted
    return Converted(clone(obj), (), (*converted.findings, *holes))
