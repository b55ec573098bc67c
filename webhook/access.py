"""Every API call the webhook makes, in one list: the chart's RBAC is derived from it.

The component tests run the webhook's Kubernetes code against :class:`kube.fake.FakeKube`
allowed exactly :data:`API_CALLS` (an undeclared call is Forbidden there), and a test
compares the list with the permissions table of docs/webhook.md.
"""

from __future__ import annotations

from dra_bridge.kube.resources import ApiCall, grant

API_CALLS: tuple[ApiCall, ...] = (
    # templates: ensure (create, get after AlreadyExists), the deletion watch, the reconciler's collection
    *grant("resource.k8s.io", "resourceclaimtemplates", "create", "get", "list", "watch", "delete"),
    *grant("", "pods", "list"),  # the reconciler: converted pods, every namespace
    *grant("coordination.k8s.io", "leases", "get", "create", "update", scope="namespace"),  # its Lease
    *grant("", "events", "create"),  # audit Events on pod owners
    # the watch-fed caches (webhook.cluster)
    *grant("", "nodes", "list", "watch"),
    *grant("", "resourcequotas", "list", "watch"),
    *grant("resource.k8s.io", "deviceclasses", "list", "watch"),
    *grant("resource.k8s.io", "resourceslices", "list", "watch"),
    *grant("", "namespaces", "list", "watch"),  # the enrolment gate: the Namespaces' labels
)
"""The webhook's API calls (verb, group, resource, scope)."""
