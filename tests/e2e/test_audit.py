"""The least-privilege check of ``audit.py`` on its own (no control plane): audit log lines in
the API server's JSON format, the webhook's declared calls."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dra_bridge.kube.resources import grant
from dra_bridge.webhook.access import API_CALLS
from tests.e2e.audit import Observed, observed_calls, service_account_user, violations, workloads_first

USER = service_account_user("dra-system", "dra-webhook")


def event(
    verb: str,
    resource: str,
    *,
    group: str = "",
    namespace: str = "",
    code: int = 200,
    user: str = USER,
    subresource: str = "",
    received: str = "2026-12-01T10:00:00.000000Z",
) -> dict[str, Any]:
    ref: dict[str, str] = {"resource": resource, "apiGroup": group, "apiVersion": "v1"}
    if namespace:
        ref["namespace"] = namespace
    if subresource:
        ref["subresource"] = subresource
    return {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "stage": "ResponseComplete",
        "verb": verb,
        "user": {"username": user},
        "objectRef": ref,
        "responseStatus": {"code": code},
        "requestReceivedTimestamp": received,
    }


def write_log(path: Path, *events: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_observed_calls_are_the_accounts_resource_requests_only(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "audit.log",
        event("list", "pods"),
        event("update", "nodes", subresource="status"),
        event("list", "pods", user="system:serviceaccount:other:x"),
        {"verb": "get", "user": {"username": USER}, "requestURI": "/version", "stage": "ResponseComplete"},
    )
    assert observed_calls(log, USER) == {
        Observed("list", "", "pods", "", 200),
        Observed("update", "", "nodes/status", "", 200),
    }


def test_declared_calls_pass_and_an_undeclared_call_fails(tmp_path: Path) -> None:
    fine = observed_calls(
        write_log(
            tmp_path / "a.log",
            event("create", "resourceclaimtemplates", group="resource.k8s.io", namespace="w"),
            event("update", "leases", group="coordination.k8s.io", namespace="dra-system"),
        ),
        USER,
    )
    assert violations(fine, API_CALLS, API_CALLS, "dra-system") == []
    # a secret read: neither declared nor granted, refused by the API server
    extra = fine | {Observed("get", "", "secrets", "w", 403)}
    assert violations(extra, API_CALLS, API_CALLS, "dra-system") == [
        "observed, not granted: get core/secrets in w (403)"
    ]


def test_a_namespace_scoped_grant_covers_the_own_namespace_only() -> None:
    lease_elsewhere = {Observed("update", "coordination.k8s.io", "leases", "kube-system", 200)}
    assert violations(lease_elsewhere, API_CALLS, API_CALLS, "dra-system") == [
        "observed, not granted: update coordination.k8s.io/leases in kube-system (200)"
    ]


def test_a_grant_beyond_the_declared_list_fails() -> None:
    granted = {*API_CALLS, *grant("", "secrets", "get")}
    assert violations(set(), granted, API_CALLS, "dra-system") == ["granted, not declared: get core/secrets"]


def test_calls_received_after_the_teardown_began_are_not_observed(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "audit.log",
        event("list", "pods", received="2026-12-01T10:00:00.500000Z"),
        event("delete", "resourceslices", group="resource.k8s.io", code=403, received="2026-12-01T10:00:02Z"),
    )
    until = datetime(2026, 12, 1, 10, 0, 1, tzinfo=UTC)
    assert observed_calls(log, USER, until=until) == {Observed("list", "", "pods", "", 200)}
    assert len(observed_calls(log, USER)) == 2


def test_teardown_deletes_the_pods_before_the_grants_they_run_under() -> None:
    created = [
        "/api/v1/namespaces/n/serviceaccounts/dra-bridge",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/dra-bridge-n",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/dra-bridge-n",
        "/api/v1/namespaces/n/pods/dra-bridge-agent",
        "/apis/apps/v1/namespaces/n/deployments/dra-webhook",
        "/api/v1/namespaces/n/services/dra-webhook",
        "/api/v1/namespaces/jobs/serviceaccounts/pods",  # a namespace or name that spells a resource
    ]
    workloads, rest = workloads_first(created)
    assert workloads == [
        "/apis/apps/v1/namespaces/n/deployments/dra-webhook",
        "/api/v1/namespaces/n/pods/dra-bridge-agent",
    ]
    assert rest == [
        "/api/v1/namespaces/jobs/serviceaccounts/pods",
        "/api/v1/namespaces/n/services/dra-webhook",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/dra-bridge-n",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/dra-bridge-n",
        "/api/v1/namespaces/n/serviceaccounts/dra-bridge",
    ]
