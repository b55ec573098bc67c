"""Each service's declared API calls are exactly the permissions its doc lists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dra_bridge.bridge.access import API_CALLS as BRIDGE_CALLS
from dra_bridge.kube.resources import ApiCall
from dra_bridge.webhook.access import API_CALLS as WEBHOOK_CALLS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def documented(doc: str) -> set[ApiCall]:
    """The rows ``| `group` `resource` (own namespace only) | verb, verb | why |`` of the
    permissions table (a core resource has no group)."""
    text = (DOCS / doc).read_text("utf-8")
    table = text.split("| resource | verbs | why |", 1)[1].split("\n\n", 1)[0]
    calls: set[ApiCall] = set()
    for row in table.strip().splitlines()[1:]:
        first, verbs = (c.strip() for c in row.strip("|").split("|")[:2])
        names = re.findall(r"`([^`]+)`", first)
        group, resource = names if len(names) == 2 else ("", names[0])
        scope = "namespace" if "own namespace" in first else "cluster"
        calls |= {ApiCall(v.strip(), group, resource, scope) for v in verbs.split(",")}  # type: ignore[arg-type]
    return calls


@pytest.mark.parametrize(
    ("doc", "declared"), [("webhook.md", WEBHOOK_CALLS), ("bridge.md", BRIDGE_CALLS)], ids=["webhook", "bridge"]
)
def test_the_declared_api_calls_are_the_documented_permissions(doc: str, declared: tuple[ApiCall, ...]) -> None:
    assert len(set(declared)) == len(declared), "a call declared twice"
    assert documented(doc) == set(declared)


def test_rbac_rules_grant_exactly_the_declared_calls_of_a_scope() -> None:
    from dra_bridge.kube.resources import rbac_rules

    assert rbac_rules(WEBHOOK_CALLS, "namespace") == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "get", "update"]}
    ]
    rules = rbac_rules(BRIDGE_CALLS)
    assert {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]} in rules
    assert sum(len(r["verbs"]) for r in rules) == len(BRIDGE_CALLS)


def test_a_non_resource_url_is_a_cluster_rule_of_its_own() -> None:
    from dra_bridge.kube.api import METRICS_CALL
    from dra_bridge.kube.resources import grant, rbac_rules

    calls = (*grant("", "pods", "list"), METRICS_CALL)
    assert rbac_rules(calls) == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
    ]
    assert rbac_rules(calls, "namespace") == [] and str(METRICS_CALL) == "get /metrics"
