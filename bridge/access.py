"""Every API call the agent makes, in one list: the chart's RBAC is derived from it.

The component tests run the agent against :class:`kube.fake.FakeKube` allowed exactly
:data:`API_CALLS` (an undeclared call is Forbidden there), and a test compares the list with
the permissions table of docs/bridge.md.
"""

from __future__ import annotations

from dra_bridge.kube.resources import ApiCall, grant

API_CALLS: tuple[ApiCall, ...] = (
    # its pool (publisher), and other drivers' slices on its node (the other-driver interlock)
    *grant("resource.k8s.io", "resourceslices", "list", "watch", "create", "update", "delete"),
    # NodePrepareResources reads each claim (UID, allocation); collection reads a checkpointed claim
    # that no container uses, by namespace/name compared by UID, to learn whether it is gone
    *grant("resource.k8s.io", "resourceclaims", "get"),
    *grant("", "nodes", "get"),  # mode label, capacity, uid (the slices' owner)
    *grant("", "nodes/status", "patch"),  # the DRABridgePreparedClaims condition
    *grant("", "events", "create"),  # refusals and alarms, on its Node
)
"""The agent's API calls (verb, group, resource, scope)."""
