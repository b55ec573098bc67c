"""What the template reconciler should do: pure decisions over listed objects.

    referenced(pods) -> {(namespace, template name)}           from spec.resourceClaims
    legacy_pod(pod) -> dict | None                              the pod as it was before conversion
    garbage(templates, pods, now, grace, first_unused) -> [(ns, name)]
        managed templates (``app.kubernetes.io/managed-by: dra-bridge-webhook``; never those
        written by ``dra-migrate convert`` or by hand) referenced by no pod for ``grace``
        seconds, counting from the later of their creation and the first time seen unused
    missing(templates, pods) -> [(pod, [template names])]      live converted pods referencing
        templates that do not exist (the race between an admission and a deletion)

``legacy_pod`` undoes a conversion from its annotation (``original``: removed requests, node
selector entries, affinity, annotations; ``spec.nodeName`` set by the scheduler is dropped)
so the plan can be recomputed: the webhook
re-creates a missing template only when the recomputed plan names the same template.
"""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from translate.names import CONVERSION_ANNOTATION, CONVERTED_LABEL, MANAGED_BY, MANAGED_BY_WEBHOOK

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


def garbage(templates: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], now: float, grace: float,
            first_unused: MutableMapping[Key, float]) -> list[Key]:
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


def missing(templates: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
            ) -> list[tuple[Mapping[str, Any], list[str]]]:
    """Live converted pods and the templates they name that do not exist."""
    existing = {(str(_meta(t).get("namespace", "")), str(_meta(t).get("name", ""))) for t in templates
                if not _meta(t).get("deletionTimestamp")}
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


def legacy_pod(pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pod before conversion, rebuilt from the conversion annotation (None when absent or odd)."""
    try:
        record = json.loads(_meta(pod)["annotations"][CONVERSION_ANNOTATION])
        templates = set(record["templates"])
        original = record.get("original") or {}
        out = copy.deepcopy(dict(pod))
        meta, spec = out["metadata"], out["spec"]
        for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
            meta.pop(key, None)
        out.pop("status", None)
        spec.pop("nodeName", None)  # set by the scheduler after admission (a pod that had it was never converted)
        del meta["annotations"][CONVERSION_ANNOTATION]
        meta["annotations"].update(original.get("annotations") or {})
        meta.get("labels", {}).pop(CONVERTED_LABEL, None)
        ours = {c["name"] for c in spec.get("resourceClaims") or [] if c.get("resourceClaimTemplateName") in templates}
        spec["resourceClaims"] = [c for c in spec.get("resourceClaims") or [] if c["name"] not in ours]
        if not spec["resourceClaims"]:
            del spec["resourceClaims"]
        moved = original.get("containers") or {}
        for fld in ("initContainers", "containers"):
            for c in spec.get(fld) or []:
                res = c.setdefault("resources", {})
                res["claims"] = [r for r in res.get("claims") or [] if r.get("name") not in ours]
                if not res["claims"]:
                    del res["claims"]
                for section, block in (moved.get(c.get("name", "")) or {}).items():
                    res.setdefault(section, {}).update(block)
        if original.get("nodeSelector"):
            spec["nodeSelector"] = {**original["nodeSelector"], **(spec.get("nodeSelector") or {})}
        if "affinity" in original:
            spec["affinity"] = original["affinity"]
        return out
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
