"""Structural checks on converted pods and templates, shared by example and property tests."""

from __future__ import annotations

from collections import Counter
from typing import Any

from dra_bridge.translate.dns_names import is_dns_label, is_dns_subdomain
from dra_bridge.translate.plan.claim_templates import internal_from_template

MAX_SELECTOR_BYTES = 10240


def devices_seen(pod: dict[str, Any], templates: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(container name, deviceClassName) -> device count the container references.

    Fails (AssertionError) when a reference does not resolve to a pod claim and a request.
    """
    by_template = {t["metadata"]["name"]: internal_from_template(t) for t in templates}
    spec = pod["spec"]
    claims = {
        c["name"]: c["resourceClaimTemplateName"]
        for c in spec.get("resourceClaims", [])
        if "resourceClaimTemplateName" in c
    }
    seen: Counter[tuple[str, str]] = Counter()
    for c in spec.get("initContainers", []) + spec["containers"]:
        refs = (c.get("resources") or {}).get("claims") or []
        pairs = [(r["name"], r.get("request")) for r in refs]
        assert len(pairs) == len(set(pairs)), f"duplicate claim reference in {c['name']}"
        for claim, request in pairs:
            if claim not in claims:
                continue  # a claim the pod already had (e.g. a NIC)
            template = claims[claim]
            assert template in by_template, f"{c['name']}: claim {claim} names unknown template {template}"
            reqs = {r["name"]: r for r in by_template[template]["requests"]}
            assert request in reqs, f"{c['name']}: request {request} not in template {template}"
            seen[(c["name"], reqs[request]["deviceClassName"])] += reqs[request]["count"]
    return dict(seen)


def check_limits(templates: list[dict[str, Any]], pod: dict[str, Any]) -> None:
    """DRA limits that JSON schemas do not check: names, 32 requests/devices, 10 KiB selectors."""
    for t in templates:
        assert is_dns_subdomain(t["metadata"]["name"])
        internal = internal_from_template(t)
        assert 0 < len(internal["requests"]) <= 32
        assert sum(r["count"] for r in internal["requests"]) <= 32
        names = [r["name"] for r in internal["requests"]]
        assert len(names) == len(set(names))
        for r in internal["requests"]:
            assert is_dns_label(r["name"]), r["name"]
            assert is_dns_subdomain(r["deviceClassName"])
            assert len(r["selectors"]) <= 32
            for s in r["selectors"]:
                assert len(s.encode()) <= MAX_SELECTOR_BYTES
    names = [c["name"] for c in pod["spec"].get("resourceClaims", [])]
    assert len(names) == len(set(names))
    assert all(is_dns_label(n) for n in names)
