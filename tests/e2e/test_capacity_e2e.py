"""The capacity check's verdicts against the real kube-scheduler (issue 12, "Cross-check with the real
control plane").

The ``MIXED`` cluster of ``tests/capacity_scenarios.py`` as fake Nodes (GFD labels,
``nvidia.com/gpu`` allocatable, a tainted L4 node), and, for DRA, the ResourceSlices the check
itself builds for them (what the bridge would publish from each node's capacity and labels)
plus our DeviceClasses. Pods are taken one at a time, in the check's order: the check is asked
whether the next pod fits, given what the pods the scheduler already bound really hold (their
claims' allocations, or their extended resources), then the pod is created and the real
scheduler binds it or reports it Unschedulable. The two answers must agree for every pod, for
the converted pods (DRA) and for the legacy pods (extended resources), and the scenario's
expected verdicts must come out (some pods fit, some do not, for each reason).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from dra_bridge.kube.errors import AlreadyExists
from dra_bridge.translate.alloc import parse_gates
from dra_bridge.translate.capacity import (
    ClusterNode,
    Held,
    check_capacity,
    cluster_devices,
    cluster_node,
    legacy_requests,
    workload_demand,
)
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.workloads import convert_object
from tests.capacity_scenarios import MIXED, MIXED_PODS, V1, catalog_classes
from tests.e2e.kubeapi import KubeClient, api_path, create_fake_node, wait_for

pytestmark = pytest.mark.e2e
RUN_LABEL = "capacity.dra-bridge.io/run"


@pytest.fixture(scope="module")
def classes(catalog: Catalog, kube: KubeClient) -> Iterator[None]:
    names = []
    for cls in catalog.device_classes():
        with contextlib.suppress(AlreadyExists):
            kube.create(api_path(V1, "deviceclasses"), {"apiVersion": V1, **cls})
        names.append(cls["metadata"]["name"])
    yield
    for name in names:
        kube.delete(api_path(V1, "deviceclasses", name=name), ignore_missing=True)


def _pinned(legacy: dict[str, Any], run: str) -> dict[str, Any]:
    """The legacy pod allowed only on this run's nodes (other tests' nodes may exist)."""
    spec = {**legacy["spec"], "nodeSelector": {**(legacy["spec"].get("nodeSelector") or {}), RUN_LABEL: run}}
    return {**legacy, "spec": spec}


@pytest.fixture
def cluster(catalog: Catalog, kube: KubeClient, classes: None) -> Iterator[tuple[str, list[ClusterNode]]]:
    """This run's nodes (named ``<node>-<run>``) and their bridge slices, as the check sees them."""
    run = uuid.uuid4().hex[:6]
    objects = []
    for node in MIXED:
        name = f"{node['metadata']['name']}-{run}"
        labels = {**node["metadata"]["labels"], "kubernetes.io/hostname": name, RUN_LABEL: run}
        gpus = node["status"]["allocatable"]["nvidia.com/gpu"]
        created = create_fake_node(
            kube, name, labels=labels, capacity={"nvidia.com/gpu": gpus}, taints=node["spec"]["taints"]
        )
        objects.append(created)
    nodes = [cluster_node(n) for n in objects]
    slices = []
    for name, spec in cluster_devices(nodes, [], catalog).slices:
        body = {k: v for k, v in spec.items() if v != []}  # the check's form lists no sharedCounters as []
        kube.create(
            api_path(V1, "resourceslices"),
            {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": body},
        )
        slices.append(name)
    yield run, nodes
    for name in slices:
        kube.delete(api_path(V1, "resourceslices", name=name), ignore_missing=True)
    for made in nodes:
        kube.delete(api_path("v1", "nodes", name=made.name), ignore_missing=True)


def _scheduled(kube: KubeClient, path: str) -> dict[str, Any]:
    """The pod once bound, or once reported Unschedulable."""

    def decided() -> dict[str, Any] | None:
        pod = kube.get(path)
        if pod["spec"].get("nodeName"):
            return pod
        cond = [c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"]
        return pod if cond and cond[0]["status"] == "False" and cond[0].get("reason") == "Unschedulable" else None

    return wait_for(decided, 60, f"{path} to be bound or reported unschedulable")


def _allocations(kube: KubeClient, namespace: str, pod: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for status in pod["status"].get("resourceClaimStatuses") or []:
        claim = kube.get(api_path(V1, "resourceclaims", namespace, status["resourceClaimName"]))
        out.append(claim["status"]["allocation"])
    return out


@pytest.mark.parametrize("model", ["dra", "legacy"])
def test_the_checks_verdict_per_pod_is_the_real_schedulers(
    catalog: Catalog, kube: KubeClient, namespace: str, cluster: tuple[str, list[ClusterNode]], model: str
) -> None:
    run, nodes = cluster
    slices = cluster_devices(nodes, [], catalog).slices
    features = parse_gates(None)
    held_allocations: list[dict[str, Any]] = []
    held_legacy: dict[str, dict[str, int]] = {}
    verdicts = []
    for case in MIXED_PODS:
        legacy = _pinned({**case.legacy, "metadata": {**case.legacy["metadata"], "namespace": namespace}}, run)
        converted = convert_object(legacy, catalog)
        assert converted.templates, case.name
        templates = {t["metadata"]["name"]: t for t in converted.templates}
        demand = workload_demand(legacy, converted.obj, templates)
        result = check_capacity(
            [demand], nodes, slices, catalog_classes(catalog), features, held=Held(held_allocations, held_legacy)
        )
        fit = result.workloads[0].pods[0]
        expected = fit.fits if model == "dra" else fit.legacy_fits
        if model == "dra":
            for template in converted.templates:
                with contextlib.suppress(AlreadyExists):
                    kube.create(api_path(V1, "resourceclaimtemplates", namespace), template)
            kube.create(api_path("v1", "pods", namespace), converted.obj)
        else:
            kube.create(api_path("v1", "pods", namespace), legacy)
        pod = _scheduled(kube, api_path("v1", "pods", namespace, case.name))
        bound = pod["spec"].get("nodeName")
        verdicts.append((case.name, expected, bool(bound)))
        if bound and model == "dra":
            held_allocations += _allocations(kube, namespace, pod)
        elif bound:
            for resource, count in legacy_requests(legacy["spec"]).items():
                node = held_legacy.setdefault(bound, {})
                node[resource] = node.get(resource, 0) + count
    assert [(name, check) for name, check, _ in verdicts] == [(name, real) for name, _, real in verdicts]
    assert [check for _, check, _ in verdicts] == [c.fits for c in MIXED_PODS]
