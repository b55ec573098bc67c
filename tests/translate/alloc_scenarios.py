"""Scenarios of tests/data/alloc/*.yaml (re-typed from upstream's allocator test table) as documents.

``documents(scenario)`` turns one scenario's shorthand (see the header of basic.yaml) into the
Kubernetes objects ``dra-migrate simulate`` reads; ``compare(expected, allocation)`` checks an
allocation as upstream's matchers do (results in any order, shareIDs left out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().parent.parent / "data" / "alloc"
V1 = "resource.k8s.io/v1"


def load() -> list[dict[str, Any]]:
    """Every scenario of every file, in file order."""
    out: list[dict[str, Any]] = []
    for path in sorted(DATA.glob("*.yaml")):
        out += yaml.safe_load(path.read_text(encoding="utf-8"))
    return out


def _slice(entry: dict[str, Any]) -> dict[str, Any]:
    spec = {k: v for k, v in entry.items() if k not in ("name", "pool", "count", "generation")}
    spec["pool"] = {
        "name": entry["pool"],
        "generation": entry.get("generation", 1),
        "resourceSliceCount": entry.get("count", 1),
    }
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": entry["name"]}, "spec": spec}


def documents(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """The scenario's objects: Node, DeviceClasses, ResourceSlices, claims, and a Pod for several claims."""
    name, region = scenario.get("node", ["node-1", "region-1"])
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"region": region, "planet": "earth"}},
        }
    ]
    classes = scenario.get("classes")
    if classes is None:
        classes = [
            {"name": f"class-{x}", "selectors": [{"cel": {"expression": f'device.driver == "driver-{x}"'}}]}
            for x in ("a", "b")
        ]
    for cls in classes:
        docs.append(
            {
                "apiVersion": V1,
                "kind": "DeviceClass",
                "metadata": {"name": cls["name"]},
                "spec": {k: v for k, v in cls.items() if k != "name"},
            }
        )
    docs += [_slice(s) for s in scenario.get("slices") or []]
    held = scenario.get("allocated") or []
    if held:
        results = [dict(zip(("driver", "pool", "device"), d.split("/"), strict=True), request="held") for d in held]
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaim",
                "metadata": {"name": "held", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "held", "exactly": {"deviceClassName": "class-a"}}]}},
                "status": {"allocation": {"devices": {"results": results}}},
            }
        )
    names = []
    for i, claim in enumerate(scenario.get("claims") or []):
        claim_name = claim.get("name", f"claim-{i}")
        names.append(claim_name)
        spec = {"devices": {k: v for k, v in claim.items() if k != "name"}}
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaim",
                "metadata": {"name": claim_name, "namespace": "default"},
                "spec": spec,
            }
        )
    if len(names) > 1:
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "pod", "namespace": "default"},
                "spec": {
                    "containers": [{"name": "c", "image": "x"}],
                    "resourceClaims": [{"name": f"c{i}", "resourceClaimName": n} for i, n in enumerate(names)],
                },
            }
        )
    return docs


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items() if k != "shareID"}
    if isinstance(value, list):
        return sorted((_canonical(v) for v in value), key=repr)
    return value


def compare(expected: dict[str, Any], allocation: dict[str, Any]) -> bool:
    """Results in any order (ConsistOf), node selector terms/requirements/values in any order."""
    want = {"devices": {"results": expected["results"]}}
    if expected.get("config"):
        want["devices"]["config"] = expected["config"]
    if expected.get("nodeSelector"):
        want["nodeSelector"] = expected["nodeSelector"]
    have = dict(allocation)
    if "nodeSelector" not in expected:
        have.pop("nodeSelector", None)
    return bool(_canonical(want) == _canonical(have))
