"""``dra-migrate simulate``: output shapes, exit codes 0/2/1, pods, templates and older API versions."""

from __future__ import annotations

import io
import json
from typing import Any

import yaml

from dra_bridge.migrate.cli import main

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "labels": {"zone": "a"}}}
OTHER_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"}}
CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}
SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpus"},
    "spec": {
        "driver": "gpu.example.com",
        "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {"name": "gpu-0", "basic": {"attributes": {"numa": {"int": 0}}}},
            {
                "name": "gpu-1",
                "basic": {"attributes": {"numa": {"int": 1}}, "taints": [{"key": "bad", "effect": "NoSchedule"}]},
            },
        ],
    },
}


def _claim(name: str, count: int = 1, version: str = "v1") -> dict[str, Any]:
    request: dict[str, Any] = {"name": "gpus"}
    body = {"deviceClassName": "gpu", "count": count}
    request.update(body if version == "v1beta1" else {"exactly": body})
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"devices": {"requests": [request]}},
    }


def _run(objects: list[dict[str, Any]], *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["simulate", *args], stdin=io.StringIO(yaml.safe_dump_all(objects)), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_claim_allocated_exits_0_and_json_has_the_scheduler_shape() -> None:
    code, out, _ = _run([NODE, CLASS, SLICE, _claim("one", version="v1beta1")], "-o", "json")
    assert code == 0
    body = json.loads(out)
    (claim,) = body["claims"]
    assert claim["outcome"] == "allocated" and claim["namespace"] == "ml" and claim["node"] == "node-1"
    assert claim["allocation"]["devices"]["results"] == [
        {"request": "gpus", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}
    ]


def test_tainted_device_is_not_allocated_so_two_devices_exit_2() -> None:
    code, _, err = _run([NODE, CLASS, SLICE, _claim("two", count=2)], "-o", "json")
    assert code == 2
    assert "ResourceClaim ml/two: unsatisfiable" in err


def test_pod_claims_from_a_template_are_allocated_together_on_the_first_node_that_fits() -> None:
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ml"},
        "spec": {"spec": _claim("x")["spec"]},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"containers": [], "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
    }
    code, out, _ = _run([OTHER_NODE, NODE, CLASS, SLICE, template, pod])
    assert code == 0
    (claim,) = list(yaml.safe_load_all(out))
    assert claim["metadata"]["name"] == "p-gpu"
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


def test_already_allocated_claim_holds_its_device() -> None:
    held = _claim("held")
    held["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpus", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]
            }
        }
    }
    code, out, _ = _run(
        [NODE, CLASS, SLICE, held, _claim("new")], "-o", "json", "--feature-gates", "DRADeviceTaints=false"
    )
    assert code == 0
    claims = {c["name"]: c for c in json.loads(out)["claims"]}
    assert claims["held"]["reason"] == "already allocated"
    assert claims["new"]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"


def test_unknown_class_is_an_error_outcome_with_upstream_message_exit_2() -> None:
    claim = _claim("c")
    claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nope"
    code, out, _ = _run([NODE, CLASS, SLICE, claim], "-o", "json")
    assert code == 2
    (result,) = json.loads(out)["claims"]
    assert result["outcome"] == "error"
    assert "could not retrieve device class nope" in result["reason"]


def test_malformed_slice_names_the_object_and_field_and_exits_1() -> None:
    bad = {**SLICE, "spec": {**SLICE["spec"], "pool": {"name": "p", "generation": "one"}}}
    code, out, err = _run([NODE, CLASS, bad, _claim("c")])
    assert code == 1 and out == ""
    assert "ResourceSlice node-1-gpus: spec.pool.generation: must be an integer" in err
    assert "Traceback" not in err


def test_missing_node_and_unknown_node_are_input_errors() -> None:
    assert _run([CLASS, SLICE, _claim("c")])[0] == 1
    code, _, err = _run([NODE, CLASS, SLICE, _claim("c")], "--node", "node-9")
    assert code == 1 and "--node node-9" in err
