"""What the template reconciler should do: pure decisions over listed objects.

referenced(pods) -> {(namespace, template name)}           from spec.resourceClaims
garbage(templates, pods, now, grace, first_unused) -> [(ns, name)]
    managed templates (``app.kubernetes.io/managed-by: dra-bridge-webhook``; never those
    written by ``dra-migrate convert`` or by hand) referenced by no pod for ``grace``
    seconds, counting from the later of their creation and the first time seen unused
missing(templates, pods) -> [(pod, [template names])]      live converted pods referencing
    templates that do not exist (the race between an admission and a deletion)
repair(pod, names, catalog, api_version) -> Repair(create, problems)
    the missing templates the pod's conversion record plans again (reverted, then
    planned with the record's options): only those are re-created
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.errors import RecordError
from dra_bridge.translate.names import CONVERTED_LABEL, MANAGED_BY, MANAGED_BY_WEBHOOK
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from dra_bridge.translate.plan.record import ConversionRecord

Key = tuple[str, str]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def referenced(pods: Iterable[Mapping[str, Any]]) -> set[Key]:
    """(namespace, template) pairs named by the pods' spec.resourceClaims."""
    out: set[Key] = set()
    for pod in pods:
        ns = str(_meta(pod).get("namespace", ""))
        for claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = claim.get("resourceClaimTemplateName") if isinstance(claim, Mapping) else None
            if name:
                out.add((ns, str(name)))
    return out


def _created(obj: Mapping[str, Any]) -> float:
    stamp = _meta(obj).get("creationTimestamp")
    try:
        return datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def managed(template: Mapping[str, Any]) -> bool:
    """True for templates this webhook created (its own managed-by value)."""
    return (_meta(template).get("labels") or {}).get(MANAGED_BY) == MANAGED_BY_WEBHOOK


def garbage(
    templates: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    now: float,
    grace: float,
    first_unused: MutableMapping[Key, float],
) -> list[Key]:
    """Managed templates unused for ``grace`` seconds (``first_unused`` is updated in place)."""
    used = referenced(pods)
    out: list[Key] = []
    seen: set[Key] = set()
    for tpl in templates:
        meta = _meta(tpl)
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        if not managed(tpl) or meta.get("deletionTimestamp") or key in used:
            continue
        seen.add(key)
        since = max(first_unused.setdefault(key, now), _created(tpl))
        if now - since >= grace:
            out.append(key)
    for key in list(first_unused):
        if key not in seen:
            del first_unused[key]
    return sorted(out)


def missing(
    templates: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], list[str]]]:
    """Live converted pods and the templates they name that do not exist."""
    existing = {
        (str(_meta(t).get("namespace", "")), str(_meta(t).get("name", "")))
        for t in templates
        if not _meta(t).get("deletionTimestamp")
    }
    out = []
    for pod in pods:
        meta = _meta(pod)
        if (meta.get("labels") or {}).get(CONVERTED_LABEL) != "true" or meta.get("deletionTimestamp"):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        ns = str(meta.get("namespace", ""))
        names = sorted({name for (n, name) in referenced([pod]) if n == ns and (ns, name) not in existing})
        if names:
            out.append((pod, names))
    return out


@dataclass(frozen=True)
class Repair:
    """For one live pod naming missing templates: the templates to ``create`` and, for those
    that cannot be re-created, the ``problems`` (one line each, naming the pod)."""

    create: tuple[dict[str, Any], ...] = ()
    problems: tuple[str, ...] = ()


def repair(pod: Mapping[str, Any], names: Iterable[str], catalog: Catalog, api_version: str) -> Repair:
    """The templates among ``names`` that ``pod``'s conversion record plans again.

    The record is reverted to the legacy pod, which is planned again with the options the
    record holds (policy draSchedulers, hamiSlicing, the catalog's target, ...: without
    them a pod converted under a policy rule may plan nothing) over the webhook's defaults
    (``api_version``, its managed-by value; records written before options were recorded
    use those alone). Only a template the new plan names exactly is re-created; a
    malformed record, a record written by ``dra-migrate`` (its templates come from the
    manifests) or a template the plan no longer names is a problem, never an exception.
    """
    meta = _meta(pod)
    ns, who = str(meta.get("namespace", "")), f"pod {meta.get('namespace')}/{meta.get('name')}"
    names = list(names)
    try:
        record = ConversionRecord.read(pod)
    except RecordError as exc:
        return Repair(problems=(f"{exc}: cannot re-create {', '.join(names)}",))
    if record is None:
        return Repair(problems=(f"{who} has no conversion record: cannot re-create {', '.join(names)}",))
    if record.options.managed_by not in (None, MANAGED_BY_WEBHOOK):
        return Repair(
            problems=(
                f"{who} was converted by {record.options.managed_by}, which owns its templates: "
                f"{', '.join(names)} not re-created",
            )
        )
    options = record.options.apply(Options(api_version=api_version, managed_by=MANAGED_BY_WEBHOOK))
    plan = plan_pod(record.revert(pod), record.options.aim(catalog), options, ns or None)
    wanted = {str(t["metadata"]["name"]): t for t in plan.templates}
    return Repair(
        tuple(wanted[n] for n in names if n in wanted),
        tuple(
            f"{who} names missing template {n}, which its conversion record no longer plans"
            for n in names
            if n not in wanted
        ),
    )
