"""AdmissionReview admission.k8s.io/v1: the typed shapes, decoding a body, building the answer.

    decode_review(body: bytes) -> AdmissionRequest     raises ReviewError (HTTP 400 / 413)
    Answer(uid, allowed, patch, warnings, audit, status).review() -> AdmissionReview

The shapes are TypedDicts as kopf types them (``kopf/_cogs/structs/reviews.py``). Decoding
checks what every answer needs and what the API server always sends (the envelope, a
``request`` object, a non-empty string ``uid``, an ``operation`` of the four, a ``namespace``
that is a DNS label: it goes into API paths, so ``kube-system/../kube-system`` is refused here,
before anything is called; ``dryRun`` a boolean when present) and refuses JSON's non-standard
constants (``NaN``, ``Infinity``): each is a ReviewError, HTTP 400, naming the field. Every other
field of the request is read defensively by the decision, because a review that decodes is
always answered HTTP 200 (docs/design.md D13): the API server treats any other status as a
failed call (it never sends a review this module refuses).

The API server may cut long warnings and audit annotations: :func:`clip` bounds them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypedDict, cast

from dra_bridge.translate.dns_names import is_dns_label
from dra_bridge.webhook.errors import ReviewError

MAX_BODY_BYTES = 3 * 1024 * 1024
#: JSON values a body may hold, counted before decoding as its ``,``, ``{`` and ``[`` bytes (an
#: over-count: those inside strings count too). ``json.loads`` holds the GIL for the whole body,
#: and 3 MiB of ``"k":[]`` pairs takes it for over 250 ms, stalling the event loop however the
#: decoding is threaded; at this count it is held for tens of milliseconds. A pod of a thousand
#: containers has some tens of thousands; a node affinity listing 95,000 products (3 MiB) fits.
MAX_JSON_VALUES = 100_000
REVIEW_API_VERSION: Final = "admission.k8s.io/v1"
MAX_WARNINGS = 12
MAX_WARNING_CHARS = 240
MAX_AUDIT_CHARS = 200
#: Characters of ``request.uid``: the API server sends a UUID (36); more is not a review of its.
MAX_UID_CHARS = 128
#: One encoder for every call (``json.dumps`` with options builds a new one each time).
COMPACT = json.JSONEncoder(separators=(",", ":")).encode

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")


class RequestKind(TypedDict):
    """A group, version and kind (``request.kind``, ``request.requestKind``)."""

    group: str
    version: str
    kind: str


class RequestResource(TypedDict):
    """A group, version and resource (``request.resource``, ``request.requestResource``)."""

    group: str
    version: str
    resource: str


class UserInfo(TypedDict, total=False):
    """Who made the request."""

    username: str
    uid: str
    groups: list[str]


class AdmissionRequest(TypedDict, total=False):
    """``AdmissionReview.request``; only ``uid`` is guaranteed by :func:`decode_review`."""

    uid: str
    kind: RequestKind
    resource: RequestResource
    subResource: str | None
    requestKind: RequestKind
    requestResource: RequestResource
    requestSubResource: str | None
    userInfo: UserInfo
    name: str
    namespace: str | None
    operation: Operation
    options: Mapping[str, Any] | None
    dryRun: bool
    object: dict[str, Any]
    oldObject: dict[str, Any] | None


class ResponseStatus(TypedDict, total=False):
    """``response.status`` of a denial."""

    code: int
    message: str


class AdmissionResponse(TypedDict, total=False):
    """``AdmissionReview.response``."""

    uid: str
    allowed: bool
    patchType: Literal["JSONPatch"]
    patch: str
    warnings: list[str]
    auditAnnotations: dict[str, str]
    status: ResponseStatus


class AdmissionReview(TypedDict, total=False):
    """An AdmissionReview admission.k8s.io/v1: ``request`` in, ``response`` out."""

    apiVersion: Literal["admission.k8s.io/v1"]
    kind: Literal["AdmissionReview"]
    request: AdmissionRequest
    response: AdmissionResponse


def clip(text: str, limit: int = MAX_WARNING_CHARS) -> str:
    """``text``, cut to ``limit`` characters with ``...`` when longer."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Answer:
    """What the response says: the decision as the API server sees it."""

    uid: str
    allowed: bool = True
    patch: tuple[dict[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    audit: Mapping[str, str] = field(default_factory=dict)
    status: tuple[int, str] | None = None

    def review(self) -> AdmissionReview:
        """The AdmissionReview to send back (HTTP 200); no ``patch`` when there is none."""
        resp: AdmissionResponse = {"uid": self.uid, "allowed": self.allowed}
        if self.patch:
            resp["patchType"] = "JSONPatch"
            resp["patch"] = base64.b64encode(COMPACT(list(self.patch)).encode()).decode()
        if self.warnings:
            resp["warnings"] = list(self.warnings)
        if self.audit:
            resp["auditAnnotations"] = dict(self.audit)
        if self.status is not None:
            resp["status"] = {"code": self.status[0], "message": self.status[1]}
        return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": resp}


def json_values(body: bytes) -> int:
    """About how many JSON values ``body`` holds (at least as many): its ``,``, ``{`` and ``[``
    bytes, counted in C without decoding."""
    return body.count(b",") + body.count(b"{") + body.count(b"[")


def decode_review(body: bytes) -> AdmissionRequest:
    """The ``request`` of an AdmissionReview v1 body; ReviewError (400, or 413 over 3 MiB or
    :data:`MAX_JSON_VALUES` values) otherwise."""
    if len(body) > MAX_BODY_BYTES:
        raise ReviewError(f"body of {len(body)} bytes exceeds the {MAX_BODY_BYTES} byte limit", 413)
    values = json_values(body)
    if values > MAX_JSON_VALUES:
        raise ReviewError(f"body holds about {values} JSON values, more than the {MAX_JSON_VALUES} limit", 413)
    try:
        text = body.decode("utf-8")  # json.loads would guess UTF-16 and UTF-32 from bytes
    except UnicodeDecodeError as exc:
        raise ReviewError(f"body is not UTF-8 (byte {exc.start}): JSON is sent as UTF-8") from exc
    if text.startswith("\ufeff"):
        raise ReviewError("body starts with a byte order mark: JSON is sent as UTF-8 without one")
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ReviewError(f"body is not JSON: {str(exc)[:200]}") from exc
    if not isinstance(doc, dict):
        raise ReviewError("body is not a JSON object")
    if doc.get("apiVersion") != REVIEW_API_VERSION or doc.get("kind") != "AdmissionReview":
        raise ReviewError(
            f"expected apiVersion {REVIEW_API_VERSION} kind AdmissionReview, got "
            f"{str(doc.get('apiVersion'))[:80]} {str(doc.get('kind'))[:80]}"
        )
    request = doc.get("request")
    if not isinstance(request, dict):
        raise ReviewError("AdmissionReview has no request object")
    if "uid" not in request:
        raise ReviewError("AdmissionReview request has no uid")
    uid = request["uid"]
    if not isinstance(uid, str) or not uid:
        raise ReviewError(f"request.uid must be a non-empty string, got {clip(json.dumps(uid), 60)}")
    if len(uid) > MAX_UID_CHARS:
        raise ReviewError(f"request.uid must be at most {MAX_UID_CHARS} characters, got {len(uid)}")
    _check_fields(request)
    return cast(AdmissionRequest, request)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON value")


def _shown(value: object) -> str:
    return "nothing" if value is _MISSING else clip(json.dumps(value), 80)


_MISSING = object()


def _check_fields(request: Mapping[str, Any]) -> None:
    """The fields the API server always sends, in the shape it sends them (module docstring)."""
    operation = request.get("operation", _MISSING)
    if operation not in OPERATIONS:
        raise ReviewError(f"request.operation must be one of {', '.join(OPERATIONS)}, got {_shown(operation)}")
    namespace = request.get("namespace", _MISSING)
    if not isinstance(namespace, str) or not is_dns_label(namespace):
        raise ReviewError(
            f"request.namespace must be a namespace name (a DNS label: a-z, 0-9 and '-', at most 63), "
            f"got {_shown(namespace)}"
        )
    dry_run = request.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise ReviewError(f"request.dryRun must be true or false, got {_shown(dry_run)}")
