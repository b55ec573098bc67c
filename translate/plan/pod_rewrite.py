"""The rewrite of a converted pod: its containers reference their claims instead of the legacy
resources, the pod lists the claims, GPU placement moves into the requests' selectors, and the
conversion record keeps what was removed (to revert it).

    rewrite(pod, claims, dropped, placement, recorded) -> (migrated pod, ConversionRecord)

``claims`` (:class:`PodClaims`) are the requests and claim templates the pod plan
(:mod:`~translate.plan.pod_plan`) laid out; the pod is never mutated (copy-on-write: :func:`writable`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, cast

from dra_bridge.translate.dns_names import canonical_json, digest_text
from dra_bridge.translate.plan.placement import Placement
from dra_bridge.translate.plan.record import ConversionRecord, OriginalValues, RecordedOptions


@dataclass(frozen=True)
class PodClaims:
    """What a converted pod gets: its named DRA ``requests`` (``users``: the containers using
    each), the claim holding each request (``claim_of``: request index -> claim index), the
    claims' names, their templates' names and the ``templates``, and the legacy resource names
    they replace (``converted``)."""

    requests: tuple[dict[str, Any], ...]
    users: tuple[tuple[str, ...], ...]
    claim_of: Mapping[int, int]
    claim_names: tuple[str, ...]
    template_names: tuple[str, ...]
    templates: tuple[dict[str, Any], ...]
    converted: frozenset[str]


def rewrite(
    pod: Mapping[str, Any],
    claims: PodClaims,
    dropped: set[str],
    placement: Placement | None,
    recorded: RecordedOptions,
) -> tuple[dict[str, Any], ConversionRecord]:
    """The migrated ``pod`` (``dropped``: legacy resource names removed without a request) and
    the conversion record written on it."""
    spec = pod.get("spec") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    new = writable(pod, spec)
    nspec = new["spec"]
    original: dict[str, Any] = {"containers": {}}
    removed = claims.converted | dropped
    for fld in ("initContainers", "containers"):
        for c in nspec.get(fld) or []:
            res = c.get("resources") or {}
            kept = remove_legacy(res, removed)
            if kept:
                original["containers"][c.get("name", "")] = kept
            refs = [
                {"name": claims.claim_names[claims.claim_of[i]], "request": claims.requests[i]["name"]}
                for i, u in enumerate(claims.users)
                if c.get("name") in u
            ]
            if refs:
                c["resources"] = res
                res["claims"] = [*(res.get("claims") or []), *refs]
            elif kept and not res:
                del c["resources"]
    nspec["resourceClaims"] = [
        *(nspec.get("resourceClaims") or []),
        *(
            {"name": n, "resourceClaimTemplateName": t}
            for n, t in zip(claims.claim_names, claims.template_names, strict=True)
        ),
    ]
    _apply_placement(new, spec, annotations, placement, original)
    _add_tolerations(nspec, sorted(claims.converted))
    template_names = list(claims.template_names)
    # digest({"templates": ..., "original": ...}): its canonical JSON written member by member,
    # the original's text kept for the record, which writes the same where it is plain ASCII.
    original_text = canonical_json(original)
    plan_hash = digest_text(f'{{"original":{original_text},"templates":{canonical_json(template_names)}}}', 12)
    record = ConversionRecord(plan_hash, tuple(template_names), cast(OriginalValues, original), recorded)
    return record.write(new, original_text), record


def remove_legacy(res: dict[str, Any], names: Collection[str]) -> dict[str, Any]:
    """Remove ``names`` from a container's (writable) limits and requests, dropping emptied
    blocks; returns what was removed, by section."""
    kept: dict[str, Any] = {}
    for section in ("limits", "requests"):
        block = res.get(section)
        if not isinstance(block, dict):
            continue
        moved = {k: v for k, v in block.items() if k in names}
        if moved:
            kept[section] = moved
            for k in moved:
                del block[k]
            if not block:
                del res[section]
    return kept


def writable(pod: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``pod`` whose parts that :func:`rewrite` changes are new objects (metadata and its
    annotations, the spec, the container lists, each container, its resources and their
    limits and requests); everything else is shared with ``pod``."""
    new = dict(pod)
    meta = new["metadata"] = dict(pod.get("metadata") or {})
    annotations = meta.get("annotations")
    if type(annotations) is dict or isinstance(annotations, Mapping):
        meta["annotations"] = dict(annotations)
    nspec = new["spec"] = dict(spec)
    for fld in ("initContainers", "containers"):
        containers = nspec.get(fld)
        if not isinstance(containers, list):
            continue
        nspec[fld] = copies = []
        for c in containers:
            c = dict(c)
            res = c.get("resources")
            if type(res) is dict or isinstance(res, Mapping):
                res = c["resources"] = dict(res)
                for section in ("limits", "requests"):
                    block = res.get(section)
                    if type(block) is dict or isinstance(block, Mapping):
                        res[section] = dict(block)
            copies.append(c)
    return new


def _apply_placement(
    new: dict[str, Any],
    spec: Mapping[str, Any],
    annotations: Mapping[str, Any],
    placement: Placement | None,
    original: dict[str, Any],
) -> None:
    if placement is None:
        return
    nspec = new["spec"]
    if spec.get("nodeSelector") and placement.node_selector != spec.get("nodeSelector"):
        removed = {k: v for k, v in spec["nodeSelector"].items() if k not in (placement.node_selector or {})}
        original["nodeSelector"] = removed
        if placement.node_selector:
            nspec["nodeSelector"] = placement.node_selector
        else:
            del nspec["nodeSelector"]
    if spec.get("affinity") is not None and placement.affinity != spec.get("affinity"):
        original["affinity"] = spec["affinity"]
        if placement.affinity:
            nspec["affinity"] = placement.affinity
        else:
            del nspec["affinity"]
    if placement.removed_annotations:
        original["annotations"] = {k: annotations[k] for k in placement.removed_annotations}
        for k in placement.removed_annotations:
            del new["metadata"]["annotations"][k]


def _add_tolerations(spec: dict[str, Any], resource_names: list[str]) -> None:
    """The tolerations the ExtendedResourceToleration admission plugin gave the legacy pod
    (key = resource name, Exists, NoSchedule), unless one already tolerates that taint."""
    tolerations = list(spec.get("tolerations") or [])
    for name in resource_names:
        covered = any(
            (type(t) is dict or isinstance(t, Mapping))
            and t.get("operator") == "Exists"
            and t.get("key") in (name, None, "")
            and t.get("effect") in (None, "", "NoSchedule")
            for t in tolerations
        )
        if not covered:
            tolerations.append({"key": name, "operator": "Exists", "effect": "NoSchedule"})
    if tolerations:
        spec["tolerations"] = tolerations
