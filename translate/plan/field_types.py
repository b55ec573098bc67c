"""Shape checks of the pod fields the migration reads and writes.

A pod (or pod template) whose fields have the wrong JSON type is not converted: each problem
becomes an ``unsupported`` finding naming the field and the type the core/v1 schema wants,
and the pod is left exactly as it was.

    shape_problems(pod, path) -> [Finding]     every such field, as the plan's findings
    require_shape(pod, label, path)            the first one as an InputError (the capacity check, simulate)
    object_meta_problem(meta)                  an object's name or namespace that is not a string
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra_bridge.translate.errors import InputError
from dra_bridge.translate.findings import Finding

_LEFT = ": the pod is left unchanged"

_SPEC_FIELDS: dict[str, type] = {
    "containers": list,
    "initContainers": list,
    "resourceClaims": list,
    "tolerations": list,
    "nodeSelector": dict,
    "affinity": dict,
}


def _kind(t: type) -> str:
    return "a list" if t is list else "a string" if t is str else "an object"


def _check(value: Any, want: type, path: str, out: list[Finding], optional: bool = True) -> bool:
    if (value is None and optional) or type(value) is want:
        return True
    ok = isinstance(value, Mapping) if want is dict else isinstance(value, want)
    if not ok:
        out.append(
            Finding(
                path,
                repr(value)[:60],
                "unsupported",
                f"{path} must be {_kind(want)} (core/v1 schema){_LEFT}",
            )
        )
    return ok


def shape_problems(pod: Mapping[str, Any], path: str = "") -> list[Finding]:
    """Findings for every field of the wrong type among those the migration touches."""
    # Every check is tried in the same order as written; a field of the expected type is passed
    # over before its path is spelled (the path is built only for a finding).
    out: list[Finding] = []
    meta, spec = pod.get("metadata"), pod.get("spec")
    _metadata(meta, path, out)
    if type(spec) is not dict and (not _check(spec, dict, f"{path}spec", out) or not isinstance(spec, Mapping)):
        return out
    for name, want in _SPEC_FIELDS.items():
        value = spec.get(name)
        if value is not None and type(value) is not want:
            _check(value, want, f"{path}spec.{name}", out)
    selector = spec.get("nodeSelector")
    if type(selector) is dict or isinstance(selector, Mapping):
        for key, value in selector.items():  # map[string]string: YAML reads `5` or `true` otherwise
            if type(value) is not str:
                _check(value, str, f"{path}spec.nodeSelector[{key}]", out, optional=False)
    for fld in ("initContainers", "containers"):
        items = spec.get(fld)
        if isinstance(items, list):
            for i, c in enumerate(items):
                if not _fine_container(c):
                    _container(c, f"{path}spec.{fld}[{i}]", out)
    affinity = spec.get("affinity")
    if type(affinity) is dict or isinstance(affinity, Mapping):
        _node_affinity(affinity.get("nodeAffinity"), f"{path}spec.affinity.nodeAffinity", out)
    return out


def _metadata(meta: Any, path: str, out: list[Finding]) -> None:
    if type(meta) is not dict:
        _check(meta, dict, f"{path}metadata", out)
    if type(meta) is dict or isinstance(meta, Mapping):
        for key in ("annotations", "labels"):
            value = meta.get(key)
            if value is not None and type(value) is not dict:
                _check(value, dict, f"{path}metadata.{key}", out)


def object_meta_problem(meta: Any) -> Finding | None:
    """An ``unsupported`` finding for an object whose ``metadata.name``, ``generateName`` or
    ``namespace`` is there but not a string (what YAML reads of ``namespace: 5``): the templates
    and the record written from it would be refused by the API server, so the object is left as
    it is. None for a fine one, or metadata that is not a mapping (:func:`shape_problems` says)."""
    if not isinstance(meta, Mapping):
        return None
    for key in ("name", "generateName", "namespace"):
        value = meta.get(key)
        if value is not None and type(value) is not str:
            where = f"metadata.{key}"
            rule = f"{where} must be a string (core/v1 schema): the object is left unchanged"
            return Finding(where, repr(value)[:60], "unsupported", rule)
    return None


def require_shape(pod: Mapping[str, Any], label: str = "", path: str = "") -> None:
    """Raise :class:`~translate.errors.InputError` (``<label>: <field> must be <type> (core/v1
    schema)``) for the first field :func:`shape_problems` finds; a checker that reads the pod
    (the capacity check, simulate) cannot leave it unchanged as the plan does."""
    problems = shape_problems(pod, path)
    if problems:
        rule = problems[0].reason.removesuffix(_LEFT)
        raise InputError(f"{label}: {rule}" if label else rule)


def _fine_container(c: Any) -> bool:
    """True where :func:`_container` would find nothing, told without spelling a path (the
    common case: plain dicts, a string name, resources with maps and a list of claims)."""
    if type(c) is not dict or type(c.get("name")) is not str:
        return False
    res = c.get("resources")
    if res is None:
        return True
    if type(res) is not dict:
        return False
    limits, requests, claims = res.get("limits"), res.get("requests"), res.get("claims")
    return (
        (limits is None or type(limits) is dict)
        and (requests is None or type(requests) is dict)
        and (claims is None or type(claims) is list)
    )


def _container(c: Any, cpath: str, out: list[Finding]) -> None:
    if not _check(c, dict, cpath, out, optional=False) or not isinstance(c, Mapping):
        return
    _check(c.get("name"), str, f"{cpath}.name", out, optional=False)
    res = c.get("resources")
    if _check(res, dict, f"{cpath}.resources", out) and isinstance(res, Mapping):
        for part in ("limits", "requests"):
            _check(res.get(part), dict, f"{cpath}.resources.{part}", out)
        _check(res.get("claims"), list, f"{cpath}.resources.claims", out)


def _node_affinity(node: Any, npath: str, out: list[Finding]) -> None:
    if not _check(node, dict, npath, out) or not isinstance(node, Mapping):
        return
    req = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    rpath = f"{npath}.requiredDuringSchedulingIgnoredDuringExecution"
    if not _check(req, dict, rpath, out) or not isinstance(req, Mapping):
        return
    terms = req.get("nodeSelectorTerms")
    if _check(terms, list, f"{rpath}.nodeSelectorTerms", out) and isinstance(terms, list):
        for t, term in enumerate(terms):
            _term(term, f"{rpath}.nodeSelectorTerms[{t}]", out)


def _term(term: Any, tpath: str, out: list[Finding]) -> None:
    if not _check(term, dict, tpath, out) or not isinstance(term, Mapping):
        return
    exprs = term.get("matchExpressions")
    if not _check(exprs, list, f"{tpath}.matchExpressions", out) or not isinstance(exprs, list):
        return
    for e, expr in enumerate(exprs):
        epath = f"{tpath}.matchExpressions[{e}]"
        if _check(expr, dict, epath, out, optional=False) and isinstance(expr, Mapping):
            _check(expr.get("key"), str, f"{epath}.key", out, optional=False)
            _check(expr.get("operator"), str, f"{epath}.operator", out, optional=False)
            _check(expr.get("values"), list, f"{epath}.values", out)
