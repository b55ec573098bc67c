"""Node selection on GPU labels -> device selectors, and HAMi annotations -> selectors.

``nodeSelector`` entries and *required* node-affinity terms on GPU Feature Discovery labels
become selectors for the pod's NVIDIA requests; a translated requirement leaves the pod only
when that keeps the meaning:

- ``nodeSelector``: each translated key is removed (the entries are AND-ed).
- required node affinity: its ``nodeSelectorTerms`` are OR-ed. With one term, translated
  expressions are removed from it. With several terms whose non-GPU parts are identical,
  the selector is the OR of each term's GPU part and the terms collapse to one. When the
  non-GPU parts differ the affinity stays as it is, with a ``partial`` finding.
- preferred affinity is never changed.

Node-level labels without device meaning (``gpu.count``, ``gpu.machine``, ...) stay.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.cel import selector_text as ex
from dra_bridge.translate.errors import OverLimit
from dra_bridge.translate.findings import OVER_API_LIMIT, Finding
from dra_bridge.translate.json_copy import clone_mapping
from dra_bridge.translate.names import (
    GFD_MIG_STRATEGY_LABEL,
    GFD_PRODUCT_LABEL,
    HAMI_ANNOTATIONS,
    HAMI_NOUSE_TYPE,
    HAMI_USE_TYPE,
    HAMI_USE_UUID,
    NVIDIA_DRIVER,
)
from dra_bridge.translate.plan.gfd_selectors import (
    Requirement,
    Untranslatable,
    is_gpu_label,
    product_mig_profile,
    selector_for,
)


@dataclass
class Placement:
    """Result for one pod spec: NVIDIA device ``selectors`` to add, the new ``node_selector``
    and ``affinity`` (None = remove the field), annotation keys to remove, findings.

    What the translated requirements say about MIG (GFD's ``gpu.product``): ``mig_profiles``, the
    profiles of ``gpu.product`` values with a ``-MIG-<profile>`` suffix (In), ``whole_products``,
    whether a value without one was among them, ``mig_single``, whether ``mig.strategy=single``
    was required: a node where ``nvidia.com/gpu`` counts MIG devices. ``shared_products``: the
    ``gpu.product`` values required (In) that end in ``-SHARED``: nodes that share each GPU by
    time-slicing without renaming the resource, where ``nvidia.com/gpu: N`` means N replicas.
    """

    selectors: list[str] = field(default_factory=list)
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    removed_annotations: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    mig_profiles: list[str] = field(default_factory=list)
    whole_products: bool = False
    mig_single: bool = False
    shared_products: list[str] = field(default_factory=list)

    def note_mig(self, req: Requirement) -> None:
        """Record what a translated requirement says about MIG devices."""
        if req.key == GFD_PRODUCT_LABEL and req.operator == "In":
            for value in req.values:
                profile = product_mig_profile(value)
                if profile is None:
                    self.whole_products = True
                elif profile not in self.mig_profiles:
                    self.mig_profiles.append(profile)
        elif req.key == GFD_MIG_STRATEGY_LABEL and req.operator == "In" and list(req.values) == ["single"]:
            self.mig_single = True

    def take_mig(self, other: Placement) -> None:
        """Add ``other``'s MIG notes to this one's."""
        self.mig_profiles += [p for p in other.mig_profiles if p not in self.mig_profiles]
        self.whole_products |= other.whole_products
        self.mig_single |= other.mig_single


#: Values a finding's legacy text lists before it counts the rest (a review may list thousands).
_LISTED_VALUES = 8


def _describe(req: Requirement) -> str:
    if not req.values:
        return f"{req.key} {req.operator}"
    if len(req.values) <= _LISTED_VALUES:
        return f"{req.key} {req.operator} {list(req.values)}"
    return f"{req.key} {req.operator} {list(req.values[:_LISTED_VALUES])} and {len(req.values) - _LISTED_VALUES} more"


def _over_limit(path: str, legacy: str, exc: OverLimit) -> Finding:
    """The finding that keeps a pod legacy because its selector would cross an API limit."""
    return Finding(path, legacy, "unsupported", f"{exc}: the pod stays on the device plugin", code=OVER_API_LIMIT)


def _translate(
    req: Requirement, path: str, minor: int, aliases: Callable[[str], tuple[str, ...]], out: Placement
) -> str | None:
    """Selector for a requirement (recording findings), or None when it stays on the pod."""
    if not is_gpu_label(req.key):
        return None
    try:
        sel = selector_for(req, minor, aliases)
        sel = None if sel is None else ex.checked(sel)
    except Untranslatable as exc:
        out.findings.append(Finding(path, _describe(req), "unsupported", str(exc)))
        return None
    except OverLimit as exc:
        out.findings.append(_over_limit(path, _describe(req), exc))
        return None
    if sel is None:
        out.findings.append(
            Finding(
                path, _describe(req), "ignored", "node-level GPU label without a device attribute: stays on the pod"
            )
        )
        return None
    out.findings.append(Finding(path, _describe(req), "translated", f"device selector over {NVIDIA_DRIVER} attributes"))
    out.note_mig(req)
    if req.key == GFD_PRODUCT_LABEL and req.operator == "In":
        out.shared_products += [v for v in req.values if v.endswith("-SHARED")]
    if req.key == GFD_PRODUCT_LABEL and any(v.endswith("-SHARED") for v in req.values):
        out.findings.append(
            Finding(
                path,
                _describe(req),
                "partial",
                "the node shares each GPU by time-slicing: on the bridge the claim gets one "
                "replica as before; after the move to the vendor driver it gets a whole GPU",
            )
        )
    return sel


def place(
    spec: Mapping[str, Any],
    annotations: Mapping[str, str],
    path: str,
    kubernetes_minor: int,
    aliases: Callable[[str], tuple[str, ...]],
) -> Placement:
    """Translate a pod spec's GPU node selection and HAMi annotations (pure)."""
    out = Placement()
    node_selector = dict(spec.get("nodeSelector") or {})
    for key in list(node_selector):
        req = Requirement(key, "In", (str(node_selector[key]),))
        sel = _translate(req, f"{path}spec.nodeSelector[{key}]", kubernetes_minor, aliases, out)
        if sel is not None:
            out.selectors.append(sel)
            del node_selector[key]
    out.node_selector = node_selector or None
    out.affinity = _affinity(spec.get("affinity"), path, kubernetes_minor, aliases, out)
    _hami(annotations, path, out)
    return out


def _affinity(
    affinity: Any, path: str, minor: int, aliases: Callable[[str], tuple[str, ...]], out: Placement
) -> dict[str, Any] | None:
    if not isinstance(affinity, Mapping):
        return None
    result = clone_mapping(affinity)
    required = (result.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = (required or {}).get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list) or not terms:
        return result
    base = f"{path}spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    term_selectors: list[list[str]] = []
    rests: list[dict[str, Any]] = []
    scratch = Placement()
    for t, term in enumerate(terms):
        sels: list[str] = []
        rest = clone_mapping(term) if isinstance(term, Mapping) else {}
        kept = []
        for e, expr in enumerate(rest.get("matchExpressions") or []):
            req = Requirement(
                str(expr.get("key", "")), str(expr.get("operator", "")), tuple(str(v) for v in expr.get("values") or ())
            )
            sel = _translate(req, f"{base}[{t}].matchExpressions[{e}]", minor, aliases, scratch)
            if sel is None:
                kept.append(expr)
            else:
                sels.append(sel)
        if kept:
            rest["matchExpressions"] = kept
        else:
            rest.pop("matchExpressions", None)
        term_selectors.append(sels)
        rests.append(rest)
    if not any(term_selectors):
        out.findings += scratch.findings
        return result
    if len(terms) > 1 and len({json.dumps(r, sort_keys=True) for r in rests}) > 1:
        out.findings += [f for f in scratch.findings if f.outcome != "translated"]
        out.findings.append(
            Finding(
                base,
                f"{len(terms)} terms",
                "partial",
                "node affinity terms are OR-ed and differ outside their GPU labels: the "
                "affinity stays as it is and the devices are not constrained by it",
            )
        )
        return result
    try:
        combined = ex.checked(ex.any_of(ex.all_of(s) for s in term_selectors))
    except OverLimit as exc:
        out.findings += [f for f in scratch.findings if f.outcome != "translated"]
        out.findings.append(_over_limit(base, f"{len(terms)} terms", exc))
        return result
    out.findings += scratch.findings
    out.take_mig(scratch)
    out.selectors.append(combined)
    rest = rests[0]
    node_affinity = result["nodeAffinity"]
    if rest.get("matchExpressions") or rest.get("matchFields"):
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = [rest]
    else:
        del node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]
    if not node_affinity:
        del result["nodeAffinity"]
    return result or None


def _hami(annotations: Mapping[str, str], path: str, out: Placement) -> None:
    for key in HAMI_ANNOTATIONS:
        if key not in annotations:
            continue
        raw = str(annotations[key])
        values = [v.strip() for v in raw.split(",") if v.strip()]
        apath = f"{path}metadata.annotations[{key}]"
        if not values:
            out.findings.append(Finding(apath, raw, "unsupported", "empty HAMi annotation"))
            continue
        try:
            test = _hami_test(key, values)
            out.selectors.append(ex.checked(test if key in (HAMI_USE_TYPE, HAMI_USE_UUID) else ex.negate(test)))
        except OverLimit as exc:
            out.findings.append(_over_limit(apath, f"{len(values)} values", exc))
            continue
        out.removed_annotations.append(key)
        out.findings.append(Finding(apath, raw, "translated", "HAMi device filter as a device selector"))


def _hami_test(key: str, values: list[str]) -> str:
    """The device test of one HAMi annotation (before negation for the ``nouse`` ones)."""
    if key in (HAMI_USE_TYPE, HAMI_NOUSE_TYPE):
        # HAMi: a case-insensitive substring of the device model (pkg/device/devices.go CheckType).
        ref = ex.attribute(NVIDIA_DRIVER, "productName")
        contains = ex.any_of(f"{ref}.lowerAscii().contains({ex.literal(v.lower())})" for v in values)
        return f"({ex.has_attribute(NVIDIA_DRIVER, 'productName')} && type({ref}) in [string] && {contains})"
    return ex.string_attribute_in(NVIDIA_DRIVER, "uuid", values)
