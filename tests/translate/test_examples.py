"""Every shipped example converts; outputs pass the API schemas and the DRA limits."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.demand import collect
from dra_bridge.translate.plan.pod_plan import Options
from dra_bridge.translate.plan.request_layout import Demand, legacy_total
from dra_bridge.translate.plan.workloads import convert_object
from tests.translate.checks import check_limits, devices_seen

EXAMPLES = sorted((Path(__file__).parents[1] / "data" / "examples").glob("*.yaml"))


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    kind = obj["kind"]
    if kind == "Pod":
        return [obj]
    if kind in ("Deployment", "StatefulSet", "Job", "ReplicaSet", "DaemonSet"):
        return [obj["spec"]["template"]]
    return []


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"])
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_converts_to_objects_the_api_schemas_accept(catalog: Catalog, path: Path, api_version: str) -> None:
    release = {"resource.k8s.io/v1": "1.34.0", "resource.k8s.io/v1beta2": "1.33.0", "resource.k8s.io/v1beta1": "1.32.0"}
    for obj in _docs(path):
        result = convert_object(obj, catalog, Options(api_version=api_version))
        for out in [*result.templates, result.obj]:
            if out["kind"] == "LeaderWorkerSet":
                continue  # a custom resource: no schema shipped
            kubernetes_validate.validate(out, release.get(out["apiVersion"], release[api_version]), strict=True)
        for template in result.templates:
            assert template["apiVersion"] == api_version
            assert template["metadata"]["namespace"] == obj["metadata"]["namespace"]
        for after in _pod_specs(result.obj):
            check_limits(list(result.templates), after)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_converted_containers_see_exactly_their_legacy_device_counts(catalog: Catalog, path: Path) -> None:
    for obj in _docs(path):
        result = convert_object(obj, catalog)
        for before, after in zip(_pod_specs(obj), _pod_specs(result.obj), strict=True):
            if after == before:
                continue
            demands = collect(before["spec"], catalog, "", [])
            legacy = Counter({(d.container, d.mapping.device_class): d.count for d in demands if d.count})
            assert devices_seen(after, list(result.templates)) == legacy
            # The pod holds exactly what the legacy scheduler counted, per resource.
            for resource in {d.mapping.resource_name for d in demands}:
                mapping = catalog.lookup(resource)
                assert mapping is not None, resource
                ds = [
                    Demand(d.container, d.role, d.index, d.count)
                    for d in demands
                    if d.mapping.resource_name == resource
                ]
                held = sum(
                    r["exactly"]["count"]
                    for t in result.templates
                    for r in t["spec"]["spec"]["devices"]["requests"]
                    if r["exactly"]["deviceClassName"] == mapping.device_class
                )
                assert held == legacy_total(ds)


def test_already_dra_workload_passes_through_unchanged(catalog: Catalog) -> None:
    for obj in _docs(EXAMPLES[[p.stem for p in EXAMPLES].index("14-helm-already-dra-claim")]):
        result = convert_object(obj, catalog)
        assert result.obj == obj
        assert result.templates == ()


def test_converting_twice_changes_nothing_more(catalog: Catalog) -> None:
    for path in EXAMPLES:
        for obj in _docs(path):
            once = convert_object(obj, catalog)
            twice = convert_object(once.obj, catalog)
            assert twice.obj == once.obj, path.name
            assert twice.templates == ()


def _containers_in(value: Any) -> dict[int, Any]:
    """Every dict and list inside ``value``, by id."""
    out: dict[int, Any] = {}
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict | list):
            out[id(v)] = v
            stack.extend(v.values() if isinstance(v, dict) else v)
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_converting_neither_mutates_the_input_nor_shares_objects_with_it(catalog: Catalog, path: Path) -> None:
    """plan_pod shares untouched subtrees with its input (copy-on-write); convert's output
    must still be a document of its own (no YAML anchors, no edits leaking back)."""
    for obj in _docs(path):
        before = yaml.safe_dump(obj)
        out = convert_object(obj, catalog, Options())
        assert yaml.safe_dump(obj) == before
        shared = _containers_in(obj).keys() & _containers_in(out.obj).keys()
        assert not shared, f"{path.name}: output shares {len(shared)} objects with the input"
        assert "&id" not in yaml.safe_dump(out.obj)
