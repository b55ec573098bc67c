"""Least privilege from the API server's audit log: what a service account did (observed), what
RBAC grants it (granted), what the service declares (``webhook/access.py``, ``bridge/access.py``).

The check is observed ⊆ granted ⊆ declared, per (verb, group, resource[/subresource]) and scope:
a ``namespace``-scoped :class:`ApiCall` covers calls in the service account's own namespace
only. A call the API server refused (403) is observed and not granted: the service made a call
it did not declare. Start the control plane with ``audit_policy=AUDIT_POLICY``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from dra_bridge.kube.resources import ApiCall
from tests.e2e.kubeapi import KubeClient

#: Metadata of every request made by a service account, once (at ResponseComplete, or
#: ResponseStarted for watches); nothing else.
AUDIT_POLICY: dict[str, object] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "userGroups": ["system:serviceaccounts"]}, {"level": "None"}],
}
#: The session control plane's: every ResourceSlice write by anyone (the agents, the kubelet's
#: wipes), once, with its metadata; nothing else (:func:`slice_writes`).
SLICE_AUDIT_POLICY: dict[str, object] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {
            "level": "Metadata",
            "verbs": ["create", "update", "patch", "delete", "deletecollection"],
            "resources": [{"group": "resource.k8s.io", "resources": ["resourceslices"]}],
        },
        {"level": "None"},
    ],
}
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@dataclass(frozen=True, order=True)
class Observed:
    """One call seen in the audit log: verb on group/resource[/subresource] in namespace ("" for
    cluster-scoped or all namespaces), and the API server's response code."""

    verb: str
    group: str
    resource: str
    namespace: str
    code: int

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.verb} {self.group or 'core'}/{self.resource}{where} ({self.code})"


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def observed_calls(log: Path, user: str, *, until: datetime | None = None) -> set[Observed]:
    """Resource requests of ``user`` in the audit log (non-resource URLs such as discovery and
    /version are every authenticated user's, granted by the built-in system:discovery role).

    ``until`` (timezone-aware) keeps only requests the API server received before it: the
    moment a test began to revoke the account's grants while its pods may still run (``helm
    uninstall`` deletes the RBAC and the pods together), after which a refused call says
    nothing about what the service declares."""
    found: set[Observed] = set()
    for line in log.read_text(errors="replace").splitlines():
        event: dict[str, Any] = json.loads(line)
        ref = event.get("objectRef")
        if event.get("user", {}).get("username") != user or not ref or "resource" not in ref:
            continue
        if until is not None and datetime.fromisoformat(event["requestReceivedTimestamp"]) >= until:
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        found.add(
            Observed(
                event["verb"],
                ref.get("apiGroup", ""),
                resource,
                ref.get("namespace", ""),
                int(event.get("responseStatus", {}).get("code", 0)),
            )
        )
    return found


@dataclass(frozen=True)
class SliceWrite:
    """One ResourceSlice write in the audit log: who (user name), the verb, the slice's name
    (empty for a ``deletecollection``), the response code and when the API server received it."""

    user: str
    verb: str
    name: str
    code: int
    received: datetime


def slice_writes(log: Path, since: datetime) -> list[SliceWrite]:
    """Every ResourceSlice write received at or after ``since`` (timezone-aware), in log order."""
    out = []
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        event: dict[str, Any] = json.loads(line)
        ref = event.get("objectRef") or {}
        if ref.get("resource") != "resourceslices" or event.get("verb") not in (
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
        ):
            continue
        received = datetime.fromisoformat(event["requestReceivedTimestamp"])
        if received >= since:
            out.append(
                SliceWrite(
                    event.get("user", {}).get("username", ""),
                    event["verb"],
                    ref.get("name", ""),
                    int(event.get("responseStatus", {}).get("code", 0)),
                    received,
                )
            )
    return out


#: Resources whose objects run a service's pods: deleted (and waited for) before its grants.
WORKLOADS = frozenset({"pods", "deployments", "daemonsets", "replicasets", "statefulsets", "jobs", "cronjobs"})


def _resource(path: str) -> str:
    """The resource of an object's API path (``.../namespaces/n/pods/x`` -> ``pods``)."""
    parts = path.rstrip("/").split("/")
    return parts[-2] if len(parts) >= 2 else ""


def workloads_first(created: Iterable[str]) -> tuple[list[str], list[str]]:
    """Objects a test created (API paths, in creation order) split for teardown: the workloads
    (newest first), to delete and wait out before the rest (newest first: bindings before roles
    and accounts). A pod whose binding is deleted while it still runs is refused (403) on its
    next call, which the check would report as a call it did not declare: under load the
    agent's shutdown and its reaction to leaving DRA mode come late enough to hit that."""
    paths = list(reversed(list(created)))
    pods = [p for p in paths if _resource(p) in WORKLOADS]
    return pods, [p for p in paths if p not in pods]


def covers(calls: Iterable[ApiCall], call: Observed, own_namespace: str) -> bool:
    """Whether one of ``calls`` allows ``call`` (namespace-scoped ones only in ``own_namespace``)."""
    return any(
        c.verb == call.verb
        and c.group == call.group
        and c.resource == call.resource
        and (c.scope == "cluster" or call.namespace == own_namespace)
        for c in calls
    )


def granted_calls(kube: KubeClient, namespace: str, name: str) -> set[ApiCall]:
    """What RBAC grants ServiceAccount ``namespace/name``: the rules of every ClusterRole bound to
    it cluster-wide (scope ``cluster``) and of every Role or ClusterRole bound in its own
    namespace (scope ``namespace``). Bindings in other namespaces are reported as calls there by
    :func:`foreign_bindings`, not expanded."""
    subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    calls: set[ApiCall] = set()
    for binding in kube.list(f"{RBAC}/clusterrolebindings"):
        if subject in (binding.get("subjects") or []):
            calls |= _rules(kube.get(f"{RBAC}/clusterroles/{binding['roleRef']['name']}"), "cluster")
    for binding in kube.list(f"{RBAC}/namespaces/{namespace}/rolebindings"):
        if subject in (binding.get("subjects") or []):
            ref = binding["roleRef"]
            path = (
                f"{RBAC}/namespaces/{namespace}/roles/{ref['name']}"
                if ref["kind"] == "Role"
                else f"{RBAC}/clusterroles/{ref['name']}"
            )
            calls |= _rules(kube.get(path), "namespace")
    return calls


def foreign_bindings(kube: KubeClient, namespace: str, name: str) -> list[str]:
    """RoleBindings outside the account's own namespace that name it (none expected)."""
    subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    return [
        f"{b['metadata']['namespace']}/{b['metadata']['name']}"
        for b in kube.list(f"{RBAC}/rolebindings")
        if b["metadata"]["namespace"] != namespace and subject in (b.get("subjects") or [])
    ]


def _rules(role: dict[str, Any], scope: str) -> set[ApiCall]:
    out: set[ApiCall] = set()
    for rule in role.get("rules") or []:
        if rule.get("resourceNames") or rule.get("nonResourceURLs"):
            raise AssertionError(f"{role['metadata']['name']}: rule {rule} is not expanded by this check")
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                for verb in rule.get("verbs", []):
                    out.add(ApiCall(verb, group, resource, scope))  # type: ignore[arg-type]
    return out


def violations(
    observed: Iterable[Observed], granted: Iterable[ApiCall], declared: Iterable[ApiCall], own_namespace: str
) -> list[str]:
    """Everything that breaks observed ⊆ granted ⊆ declared (empty when least privilege holds).
    Wildcards (``*``) in a grant are never declared, so they are reported as such."""
    granted, declared = set(granted), set(declared)
    out = [
        f"observed, not granted: {o}"
        for o in sorted(observed)
        if o.code == 403 or not covers(granted, o, own_namespace)
    ]
    out += [f"granted, not declared: {g}" for g in sorted(granted, key=str) if g not in declared]
    return out
