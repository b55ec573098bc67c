"""The API server's limits on the claim templates the plan renders (docs/design.md D33).

A template the API server refuses is an outage under the webhook (the pod is left unchanged or
denied every time it is created) and a failed apply after ``dra-migrate convert``, so the plan
checks every limit the API server enforces on what it writes, and a pod whose templates would
cross one stays legacy with an ``unsupported`` finding naming it (``Finding.code``
:data:`~translate.findings.OVER_API_LIMIT`):

    CEL selector length       10240 characters (CELSelectorExpressionMaxLength)   checked while the
    CEL selector cost         1,000,000 (CELSelectorExpressionMaxCost), bounded    text is built:
                              at 64 per character (translate/cel/selector_text.py) translate/plan/placement.py
    selectors per request     32 (DeviceSelectorsMaxSize)                          :func:`template_problem`
    requests per claim        32 (DeviceRequestsMaxSize; the plan packs claims     :func:`template_problem`
                              to keep it: translate/plan/alignment.py)
    constraints per claim     32 (DeviceConstraintsMaxSize)                        :func:`template_problem`
    one object                1.5 MiB (etcd's default --max-request-bytes), as     :func:`template_problem`
                              its compact JSON, larger than the stored protobuf

Sources: https://github.com/kubernetes/api/blob/master/resource/v1/types.go (the constants),
https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/resource/validation/validation.go
(where they are enforced), https://etcd.io/docs/v3.6/dev-guide/limit/ (the request size).

Each check stops as soon as its limit is crossed: the size of a template is summed member by
member, each distinct string measured once, and the sum given up the moment it passes the limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from dra_bridge.translate.findings import OVER_API_LIMIT, Finding
from dra_bridge.translate.inventory.api_rules import MAX_REQUESTS_PER_CLAIM

#: Selectors in one device request (resource.k8s.io/v1 ``DeviceSelectorsMaxSize``).
MAX_SELECTORS_PER_REQUEST = 32
#: Constraints in one claim (``DeviceConstraintsMaxSize``; alignment writes one per group of
#: at least two requests, so at most 16 in a claim of 32 requests).
MAX_CONSTRAINTS_PER_CLAIM = 32
#: The largest object we create: etcd's default request limit (``--max-request-bytes``, 1.5 MiB),
#: which the API server's write of the object must fit.
MAX_OBJECT_BYTES = 1536 * 1024

_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
_encode_text = json.encoder.encode_basestring_ascii  # what _ENCODE writes for a str, without its call


def json_size(value: Any, limit: int = MAX_OBJECT_BYTES) -> int:
    """The length of ``value``'s compact JSON (``json.dumps`` with ``(",", ":")``), or ``limit + 1``
    as soon as it is known to exceed ``limit``. A string that appears many times (one selector in
    every request) is encoded once, and a key once per call."""
    seen: dict[int, int] = {}
    keys: dict[str, int] = {}
    total = 0
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        kind = type(v)
        if kind is str:
            n = seen.get(id(v))
            if n is None:
                n = seen[id(v)] = len(_encode_text(v))
            total += n
        elif kind is int:
            total += len(int.__repr__(v))  # what the encoder writes for an int
        elif isinstance(v, Mapping):
            total += 2 + max(len(v) - 1, 0)  # braces, commas
            for k in v:
                if type(k) is str:
                    n = keys.get(k)
                    if n is None:
                        n = keys[k] = len(_encode_text(k)) + 1
                    total += n
                else:
                    total += len(_ENCODE(str(k))) + 1
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            total += 2 + max(len(v) - 1, 0)
            stack.extend(v)
        else:
            total += len(_ENCODE(v))
        if total > limit:
            return limit + 1
    return total


def _requests(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(template["spec"]["spec"]["devices"]["requests"])


def template_problem(template: Mapping[str, Any], path: str, legacy: str) -> Finding | None:
    """The finding that keeps the pod legacy because the API server would refuse ``template``
    (rendered in any version), or None. ``path`` and ``legacy``: the legacy value it renders."""
    name = str(template["metadata"]["name"])
    requests = _requests(template)
    if len(requests) > MAX_REQUESTS_PER_CLAIM:
        return _finding(
            path,
            legacy,
            f"ResourceClaimTemplate {name} would have {len(requests)} requests, more than the "
            f"{MAX_REQUESTS_PER_CLAIM} the API server accepts in a claim (DeviceRequestsMaxSize)",
        )
    constraints = template["spec"]["spec"]["devices"].get("constraints") or []
    if len(constraints) > MAX_CONSTRAINTS_PER_CLAIM:
        return _finding(
            path,
            legacy,
            f"ResourceClaimTemplate {name} would have {len(constraints)} constraints, more than the "
            f"{MAX_CONSTRAINTS_PER_CLAIM} the API server accepts in a claim (DeviceConstraintsMaxSize)",
        )
    for request in requests:
        selectors = request.get("exactly", request).get("selectors") or []
        if len(selectors) > MAX_SELECTORS_PER_REQUEST:
            return _finding(
                path,
                legacy,
                f"request {request['name']} would have {len(selectors)} device selectors, more than "
                f"the {MAX_SELECTORS_PER_REQUEST} the API server accepts in a request (DeviceSelectorsMaxSize)",
            )
    if json_size(template) > MAX_OBJECT_BYTES:
        return _finding(
            path,
            legacy,
            f"ResourceClaimTemplate {name} would be larger than {MAX_OBJECT_BYTES // 1024} KiB, "
            "the most the API server can store in one object (etcd's --max-request-bytes)",
        )
    return None


def first_problem(templates: Iterable[Mapping[str, Any]], path: str, legacy: str) -> Finding | None:
    """The first of ``templates``' :func:`template_problem` findings, or None."""
    return next((f for t in templates if (f := template_problem(t, path, legacy)) is not None), None)


def _finding(path: str, legacy: str, what: str) -> Finding:
    return Finding(path, legacy, "unsupported", f"{what}: the pod stays on the device plugin", code=OVER_API_LIMIT)
