"""AdmissionReview admission.k8s.io/v1 in, a decision and its response out (no I/O).

    decode_review(body: bytes) -> request dict          raises ReviewError (HTTP 400 / 413)
    evaluate(request, mode, context) -> Decision         never raises
    Decision.response() -> AdmissionReview dict          (what the handler sends, HTTP 200)

Rules (design decisions 1, 2, 8, 9; style items 4, 5):
- the patch is ``jsonpatch.JsonPatch.from_diff(original, migrated)``: never hand-built paths
  (resource names hold ``/``, escaped ``~1`` by the library); no patch when nothing changes;
- ``uid`` is echoed; anything that decodes (a non-Pod, an odd pod) is allowed unchanged with
  a warning, because the API server treats every non-200 as a webhook failure;
- a pod already carrying the conversion annotation plans to itself: re-invocation is a no-op;
- audit mode never patches: the plan goes to ``warnings`` and short ``auditAnnotations``;
- enforce returns a decision whose ``templates`` must exist before the patch may be sent;
  :meth:`Decision.failed` turns it into admit-unchanged or deny (policy ``onError``), so a
  half-patched pod is impossible.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import jsonpatch
import jsonpointer

from translate.catalog import Catalog
from translate.findings import Finding
from translate.names import MANAGED_BY_WEBHOOK
from translate.plan.cluster_state import converted_resources, held_back
from translate.plan.pod_plan import Options, plan_pod
from webhook.errors import ReviewError
from webhook.policy import Policy, Subject, Translation, policy_remedy

Mode = Literal["enforce", "audit"]
MAX_BODY_BYTES = 3 * 1024 * 1024
REVIEW_API_VERSION = "admission.k8s.io/v1"
MAX_WARNINGS = 12
MAX_WARNING_CHARS = 240
MAX_AUDIT_CHARS = 200
#: One encoder for every call (``json.dumps`` with options builds a new one each time).
_COMPACT = json.JSONEncoder(separators=(",", ":")).encode


@dataclass(frozen=True)
class Context:
    """What a decision depends on besides the review.

    ``node_mode(name)``: the ``dra-bridge.io/mode`` label of a node (None when unknown);
    ``quota_keys(namespace)``: the resource keys any ResourceQuota there limits;
    ``kep5004``: legacy resource name -> DeviceClass serving it via KEP-5004; ``patches``:
    the memo of patches (None: diff every time).
    """

    catalog: Catalog
    policy: Policy
    api_version: str
    kep5004: Mapping[str, str] = field(default_factory=dict)
    node_mode: Callable[[str], str | None] = lambda _name: None
    quota_keys: Callable[[str], frozenset[str]] = lambda _ns: frozenset()
    patches: PatchMemo | None = None


@dataclass(frozen=True)
class Decision:
    """One answer. ``outcome``: patched, unchanged, audited, ignored, error-admitted or denied."""

    uid: str
    allowed: bool
    outcome: str
    namespace: str = ""
    name: str = ""
    dry_run: bool = False
    patch: tuple[dict[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    audit: Mapping[str, str] = field(default_factory=dict)
    templates: tuple[dict[str, Any], ...] = ()
    translated: tuple[str, ...] = ()
    owner: Mapping[str, Any] | None = None
    summary: str = ""
    status: tuple[int, str] | None = None
    settings: Translation = field(default_factory=Translation)

    def failed(self, reason: str) -> Decision:
        """The decision once its templates could not be ensured: deny, or admit unchanged."""
        if self.settings.on_error == "deny":
            msg = f"dra-bridge: cannot ensure ResourceClaimTemplate: {reason} (policy onError: deny)"
            return replace(self, allowed=False, outcome="denied", patch=(), status=(403, msg[:1000]), audit={})
        warn = _clip(f"dra-bridge: left on the device plugin, the ResourceClaimTemplate could not be ensured: {reason}")
        return replace(self, outcome="error-admitted", patch=(), warnings=(*self.warnings, warn)[-MAX_WARNINGS:],
                       audit={"not-applied": _clip(f"{self.summary} (template not ensured: {reason})",
                                                   MAX_AUDIT_CHARS)})

    def response(self) -> dict[str, Any]:
        """The AdmissionReview to send back (HTTP 200)."""
        resp: dict[str, Any] = {"uid": self.uid, "allowed": self.allowed}
        if self.patch:
            resp["patchType"] = "JSONPatch"
            resp["patch"] = base64.b64encode(_COMPACT(list(self.patch)).encode()).decode()
        if self.warnings:
            resp["warnings"] = list(self.warnings)
        if self.audit:
            resp["auditAnnotations"] = dict(self.audit)
        if self.status is not None:
            resp["status"] = {"code": self.status[0], "message": self.status[1]}
        return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": resp}


def _clip(text: str, limit: int = MAX_WARNING_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def decode_review(body: bytes) -> dict[str, Any]:
    """The ``request`` of an AdmissionReview v1 body; ReviewError (400, or 413 over 3 MiB) otherwise."""
    if len(body) > MAX_BODY_BYTES:
        raise ReviewError(f"body of {len(body)} bytes exceeds the {MAX_BODY_BYTES} byte limit", 413)
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ReviewError(f"body is not JSON: {str(exc)[:200]}") from exc
    if not isinstance(doc, dict):
        raise ReviewError("body is not a JSON object")
    if doc.get("apiVersion") != REVIEW_API_VERSION or doc.get("kind") != "AdmissionReview":
        raise ReviewError(f"expected apiVersion {REVIEW_API_VERSION} kind AdmissionReview, got "
                          f"{str(doc.get('apiVersion'))[:80]} {str(doc.get('kind'))[:80]}")
    request = doc.get("request")
    if not isinstance(request, dict):
        raise ReviewError("AdmissionReview has no request object")
    if "uid" not in request:
        raise ReviewError("AdmissionReview request has no uid")
    uid = request["uid"]
    if not isinstance(uid, str) or not uid:
        raise ReviewError(f"request.uid must be a non-empty string, got {_clip(json.dumps(uid), 60)}")
    return request


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _controller(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def _warning(f: Finding) -> str:
    """``dra-bridge: <path>: <outcome>: <reason>`` in at most MAX_WARNING_CHARS: a long path is
    shortened in its middle first, so the reason and its advice stay whole; a pod-level
    finding (path ".") names no path."""
    tail = f"{f.outcome}: {f.phrased(policy_remedy(f)).reason}"
    if f.path in ("", "."):
        return _clip(f"dra-bridge: {tail}")
    path, room = f.path, MAX_WARNING_CHARS - len("dra-bridge: : ") - len(tail)
    if len(path) > room:
        keep = max(room, 24) - 3
        path = path[: keep // 2] + "..." + path[len(path) - (keep - keep // 2):]
    return _clip(f"dra-bridge: {path}: {tail}")


def evaluate(request: Mapping[str, Any], mode: Mode, ctx: Context) -> Decision:
    """Decide on one decoded review request (see the module docstring). Never raises."""
    uid = str(request["uid"])
    obj = request.get("object")
    namespace = _str(request.get("namespace"))
    kind = _dict(request.get("kind"))
    if kind.get("kind") != "Pod" or kind.get("group", "") != "" or request.get("subResource"):
        return Decision(uid, True, "ignored", namespace, _str(request.get("name")),
                        warnings=(f"dra-bridge: not a Pod ({_clip(str(kind.get('kind')), 60)}): left unchanged",))
    if request.get("operation") not in ("CREATE", None):
        return Decision(uid, True, "ignored", namespace, _str(request.get("name")))
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
        return Decision(uid, True, "ignored", namespace, warnings=("dra-bridge: the review carries no pod object: "
                                                                   "left unchanged",))
    meta = _dict(obj.get("metadata"))
    spec = _dict(obj.get("spec"))
    namespace = namespace or _str(meta.get("namespace"))
    name = _str(meta.get("name")) or (_str(meta.get("generateName")) + "*" if meta.get("generateName") else "")
    name = name or _str(request.get("name"))
    owner = _controller(meta)
    labels = {str(k): str(v) for k, v in _dict(meta.get("labels")).items()}
    subject = Subject(namespace, labels, _str(owner.get("kind")) if owner else "", _str(spec.get("schedulerName")))
    settings = ctx.policy.settings_for(subject)
    base = Decision(uid, True, "unchanged", namespace, name, request.get("dryRun") is True, owner=owner,
                    settings=settings)
    options = Options(api_version=ctx.api_version, managed_by=MANAGED_BY_WEBHOOK,
                      keep_legacy_partial=settings.keep_legacy, hami_slicing=settings.hami_slicing,
                      kep5004=ctx.kep5004 if settings.defer_to_kep5004 else {},
                      dra_schedulers=settings.dra_schedulers)
    try:
        plan = plan_pod(obj, ctx.catalog, options, namespace or None)
    except Exception as exc:  # plan_pod promises not to raise; an odd pod must still be admitted
        return replace(base, warnings=(_clip(f"dra-bridge: could not read the pod ({type(exc).__name__}: {exc}): "
                                             "left unchanged"),))
    findings = list(plan.findings)
    if plan.changed:
        findings += held_back(plan.pod, spec, subject.owner_kind, ctx.node_mode, ctx.quota_keys(subject.namespace),
                              ctx.catalog, settings.ignore_legacy_quota)
    warnings = tuple(_warning(f) for f in findings if f.severity >= 2)[:MAX_WARNINGS]
    if not plan.changed or any(f.outcome == "kept-legacy" and f.path.startswith("(") for f in findings):
        return replace(base, warnings=warnings)
    translated = tuple(sorted(converted_resources(plan.pod)))
    templates = tuple(str(t["metadata"]["name"]) for t in plan.templates)
    summary = _clip(f"convert {', '.join(translated)} to claims from ResourceClaimTemplate {', '.join(templates)}",
                    MAX_AUDIT_CHARS)
    if mode == "audit":
        audit = {"plan": summary}
        return replace(base, outcome="audited", translated=translated, summary=summary, audit=audit,
                       warnings=(f"dra-bridge (audit): would {summary}", *warnings)[:MAX_WARNINGS])
    patch = diff(obj, plan.pod, ctx.patches)
    return replace(base, outcome="patched", patch=patch, templates=plan.templates, translated=translated,
                   summary=summary, warnings=warnings, audit={"plan": summary})


def _pruned(src: Any, dst: Any) -> tuple[Any, Any]:
    """Copies of two values without the object members equal on both sides (same type and
    ``==``), recursively. Arrays of equal length become objects keyed by index ("0", "1",
    ...) holding only the elements that differ: a JSON Pointer names an array element and
    an object member the same way (``/spec/containers/0``), and equal lengths mean elements
    are only changed in place, never inserted or removed, so every path the library writes
    for such an object is the path of that element in the array."""
    if isinstance(src, dict) and isinstance(dst, dict):
        a, b = dict(src), dict(dst)
        for key in a.keys() & b.keys():
            x, y = a[key], b[key]
            if x is y or (type(x) is type(y) and x == y):
                del a[key], b[key]
            else:
                a[key], b[key] = _pruned(x, y)
        return a, b
    if isinstance(src, list) and isinstance(dst, list) and len(src) == len(dst):
        a, b = {}, {}
        for i, (x, y) in enumerate(zip(src, dst, strict=True)):
            if not (x is y or (type(x) is type(y) and x == y)):
                a[str(i)], b[str(i)] = _pruned(x, y)
        return a, b
    return src, dst


def _faithful(ops: Sequence[dict[str, Any]], migrated: Mapping[str, Any]) -> bool:
    """True when every value the operations write is the value at that path in ``migrated``
    (so no pruned member can leak into the patch) and no operation moves or copies."""
    for op in ops:
        if op["op"] in ("move", "copy"):
            return False
        if op["op"] in ("add", "replace") and isinstance(op["value"], dict | list):
            try:
                if jsonpointer.resolve_pointer(migrated, op["path"]) != op["value"]:
                    return False
            except jsonpointer.JsonPointerException:
                return False
    return True


class PatchMemo:
    """Operations already computed, by the exact JSON text of the pruned document pair.

    Pods of one ReplicaSet, Job or StatefulSet differ only in what is equal before and after
    the migration (name, uid, hash labels), which pruning drops, so after the first pod of a
    workload the library's diff is a lookup. At most ``size`` pairs (the oldest is forgotten
    first), each with a key of at most ``max_key_chars`` characters (larger pairs, such as an
    odd pod's thousands of tolerations, are diffed every time), so the memo holds a few MiB
    at most; the operations are shared between answers and never mutated.
    """

    def __init__(self, size: int = 512, max_key_chars: int = 8192) -> None:
        self.size = size
        self.max_key_chars = max_key_chars
        self._ops: dict[str, tuple[dict[str, Any], ...]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> tuple[dict[str, Any], ...] | None:
        """The operations stored under ``key`` (counted as a hit), or None (a miss)."""
        found = self._ops.get(key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def __len__(self) -> int:
        """Pairs held."""
        return len(self._ops)

    def put(self, key: str, ops: tuple[dict[str, Any], ...]) -> None:
        """Store ``ops`` under ``key`` unless the key is too long; forget the oldest when full."""
        if self.size <= 0 or len(key) > self.max_key_chars:
            return
        if len(self._ops) >= self.size:
            del self._ops[next(iter(self._ops))]
        self._ops[key] = ops


def diff(original: Mapping[str, Any], migrated: Mapping[str, Any],
         memo: PatchMemo | None = None) -> tuple[dict[str, Any], ...]:
    """RFC 6902 operations turning ``original`` into ``migrated``: ``jsonpatch.JsonPatch.from_diff``.

    Members equal on both sides are dropped from both first (``_pruned``): jsonpatch
    compares objects member by member, so a member absent from both yields no operation and
    the walk is much shorter (the pod's unchanged env, volumes, status...). Every path and
    value is still the library's. Should the library emit a composite value that pruning
    touched (``_faithful``, checked on every call, memo hit or not), the full documents are
    diffed instead. ``optimization=False``: add, remove and replace only (no move/copy
    operations to reason about). With a ``memo``, the operations for a pruned pair seen
    before are reused (they depend on the pair alone).
    """
    a, b = _pruned(original, migrated)
    key = ""
    if memo is not None:
        with contextlib.suppress(TypeError, ValueError, RecursionError):  # not JSON: no memo
            key = _COMPACT((a, b))
    ops = memo.get(key) if memo is not None and key else None
    if ops is None:
        ops = tuple(jsonpatch.JsonPatch.from_diff(a, b, optimization=False).patch)
        if memo is not None and key and _faithful(ops, migrated):
            memo.put(key, ops)
            return ops
    if not _faithful(ops, migrated):
        return tuple(jsonpatch.JsonPatch.from_diff(original, migrated, optimization=False).patch)
    return ops


def warn_all(decision: Decision, extra: Sequence[str]) -> Decision:
    """``decision`` with more warnings (clipped, at most MAX_WARNINGS)."""
    return replace(decision, warnings=(*decision.warnings, *(_clip(w) for w in extra))[:MAX_WARNINGS])
