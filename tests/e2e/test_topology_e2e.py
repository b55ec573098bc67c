"""Topology alignment (issue 14) through the real API server and scheduler.

- templates with alignment constraints (2, 4, 8 devices, pod scope, init containers reusing app
  devices, MIG) are accepted in every served resource.k8s.io version;
- the scenarios of ``tests/topology_scenarios.py``: the bridge's slices of a node with two NUMA
  nodes x 4 GPUs, one already allocated to another pod; a converted pod with ``numa`` (or
  ``pcie``) lands on aligned devices (read from the allocation), one that cannot be aligned
  stays unschedulable with the scheduler's reason, and the same pods without the option take
  unaligned devices;
- the allocation engine (``translate/alloc``, through ``engine_placement``) gives each case the
  same outcome and the very devices the scheduler allocated (one pool, one slice: the
  allocator's first-fit order is the slice's device order in every allocator variant).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from dra_bridge.kube.errors import AlreadyExists
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.inventory.pool import render_slice
from dra_bridge.translate.plan.claim_templates import internal_from_template
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from tests.e2e.kubeapi import KubeClient, api_path, create_fake_node, wait_for, wait_for_object
from tests.factories import gpu, make_container, make_pod
from tests.topology_scenarios import CASES, V1, TopologyCase, engine_placement, outcome_of

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def classes(catalog: Catalog, kube: KubeClient) -> Iterator[None]:
    names = []
    for cls in catalog.device_classes(["1g.10gb"]):
        with contextlib.suppress(AlreadyExists):
            kube.create(api_path(V1, "deviceclasses"), {"apiVersion": V1, **cls})
        names.append(cls["metadata"]["name"])
    yield
    for name in names:
        kube.delete(api_path(V1, "deviceclasses", name=name), ignore_missing=True)


TABLE = [
    ("2-gpus", make_pod([make_container("main", gpu(2))]), "container"),
    ("4-gpus", make_pod([make_container("main", gpu(4))]), "container"),
    ("8-gpus-two-containers", make_pod([make_container("a", gpu(8)), make_container("b", gpu(8))]), "container"),
    ("pod-scope", make_pod([make_container("a", gpu(1)), make_container("b", gpu(2))]), "pod"),
    ("init-reuse", make_pod([make_container("app", gpu(2))], init=[make_container("setup", gpu(4))]), "container"),
    ("mig", make_pod([make_container("main", gpu(2, "nvidia.com/mig-1g.10gb"))]), "container"),
]


@pytest.mark.server_version
@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_aligned_templates_are_accepted_in_every_served_version(
    catalog: Catalog, kube: KubeClient, namespace: str, classes: None, version: str
) -> None:
    api_version = f"resource.k8s.io/{version}"
    for case, pod, scope in TABLE:
        plan = plan_pod(
            pod,
            catalog,
            Options(api_version=api_version, alignment="pcie", alignment_scope=scope),  # type: ignore[arg-type]
            namespace,
        )
        assert plan.changed, case
        for template in plan.templates:
            with contextlib.suppress(AlreadyExists):
                kube.create(api_path(api_version, "resourceclaimtemplates", namespace), template)
            back = kube.get(api_path(api_version, "resourceclaimtemplates", namespace, template["metadata"]["name"]))
            assert internal_from_template(back)["constraints"] == internal_from_template(template)["constraints"], case


@pytest.fixture
def topology_node(catalog: Catalog, kube: KubeClient, namespace: str, classes: None) -> Iterator[str]:
    """The scenarios' node: a fake Node, the bridge's slices, and its already allocated GPUs
    held by a running pod's claim."""
    node = f"numa-{uuid.uuid4().hex[:6]}"
    create_fake_node(kube, node)
    scenario = CASES[0].node
    names = []
    for internal in scenario.slices(catalog, node):
        body = render_slice(internal, V1)
        kube.create(api_path(V1, "resourceslices"), body)
        names.append(body["metadata"]["name"])
    kube.create(api_path(V1, "resourceclaims", namespace), scenario.held_claim())
    kube.create(
        api_path("v1", "pods", namespace),
        _pinned(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "holder", "namespace": namespace},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"claims": [{"name": "held"}]},
                        }
                    ],
                    "resourceClaims": [{"name": "held", "resourceClaimName": "held"}],
                },
            },
            node,
        ),
    )
    wait_for_object(
        kube,
        api_path("v1", "pods", namespace, "holder"),
        lambda p: p["spec"].get("nodeName"),
        60,
        "the pod holding the already allocated GPUs to be bound",
    )
    yield node
    kube.delete(api_path("v1", "pods", namespace, "holder"), ignore_missing=True)
    for name in names:
        kube.delete(api_path(V1, "resourceslices", name=name), ignore_missing=True)
    kube.delete(api_path("v1", "nodes", name=node), ignore_missing=True)


def _pinned(pod: dict[str, Any], node: str) -> dict[str, Any]:
    """``pod`` allowed on ``node`` only (other tests' nodes may exist)."""
    return {**pod, "spec": {**pod["spec"], "nodeSelector": {"kubernetes.io/hostname": node}}}


def _allocated_devices(kube: KubeClient, namespace: str, pod: dict[str, Any]) -> list[str]:
    claims = pod["status"]["resourceClaimStatuses"]
    out = []
    for status in claims:
        claim = kube.get(api_path(V1, "resourceclaims", namespace, status["resourceClaimName"]))
        out += [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]]
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_real_scheduler_places_converted_pods_as_the_scenario_says(
    catalog: Catalog, kube: KubeClient, namespace: str, topology_node: str, case: TopologyCase
) -> None:
    plan = case.plan(catalog, namespace, "pod")
    for template in plan.templates:
        kube.create(api_path(V1, "resourceclaimtemplates", namespace), template)
    kube.create(api_path("v1", "pods", namespace), _pinned(plan.pod, topology_node))
    path = api_path("v1", "pods", namespace, "pod")
    if case.outcome == "unschedulable":

        def refused() -> dict[str, Any] | None:
            pod = kube.get(path)
            cond = [c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"]
            return (
                cond[0] if cond and cond[0]["status"] == "False" and cond[0].get("reason") == "Unschedulable" else None
            )

        reason = wait_for(refused, 60, "the pod to be reported unschedulable")
        assert "cannot allocate all claims" in reason["message"], reason["message"]
        assert not kube.get(path)["spec"].get("nodeName")
        assert engine_placement(case, catalog, topology_node).outcome == "unschedulable"
        return
    bound = wait_for_object(
        kube,
        path,
        lambda p: p["spec"].get("nodeName") and p["status"].get("resourceClaimStatuses"),
        60,
        "the converted pod to be bound with its claim allocated",
    )
    assert bound["spec"]["nodeName"] == topology_node
    devices = _allocated_devices(kube, namespace, bound)
    assert len(devices) == case.gpus
    assert outcome_of(case, catalog, topology_node, devices) == case.outcome, (case.id, devices)
    engine = engine_placement(case, catalog, topology_node)
    assert (engine.outcome, list(engine.devices)) == (case.outcome, devices)
