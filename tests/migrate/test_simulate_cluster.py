"""``dra-migrate simulate`` over convert's own output on a cluster of several nodes (issue 19).

convert's output goes in as it is (generateName pods named for the simulation as the report
names them), each pod goes to the first node where its claims fit, custom resources are
simulated through their pod templates or refused by name, duplicate objects are warned about,
and a pod that fits nowhere says which request, selector or constraint failed.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import yaml

from dra_bridge.migrate.cli import main

EXAMPLES = Path(__file__).parents[1] / "data" / "examples"
CUSTOM = Path(__file__).parents[1] / "data" / "custom-resources"
GPU = "nvidia.com/gpu"


def _command(args: list[str], objects: list[dict[str, Any]] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    stdin = io.StringIO(yaml.safe_dump_all(objects or []))
    code = main(args, stdin=stdin, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _convert(objects: list[dict[str, Any]], *args: str) -> list[dict[str, Any]]:
    code, out, err = _command(["convert", *args, *([] if "-f" in args else ["-f", "-"])], objects)
    assert code == 0, err
    return [d for d in yaml.safe_load_all(out) if d]


def _cluster(nodes: int = 2, gpus: int = 1) -> list[dict[str, Any]]:
    """Nodes ``node-a``, ``node-b``, ... with ``gpus`` bridge devices each, and the shipped classes."""
    code, out, err = _command(["classes"])
    assert code == 0, err
    docs: list[dict[str, Any]] = [d for d in yaml.safe_load_all(out) if d]
    for n in range(nodes):
        name = f"node-{chr(ord('a') + n)}"
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus"},
                "spec": {
                    "driver": "dra-bridge.io",
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [
                        {"name": f"gpu-{i}", "attributes": {"resourceName": {"string": GPU}, "index": {"int": i}}}
                        for i in range(gpus)
                    ],
                },
            }
        )
    return docs


def _simulate(objects: list[dict[str, Any]], *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = _command(["simulate", "-o", "json", *args], objects)
    return code, json.loads(out) if out else {}, err


def _pod(name: str, gpus: int = 1, generate: bool = False, **spec: Any) -> dict[str, Any]:
    meta = {"generateName": f"{name}-"} if generate else {"name": name}
    container = {"name": "c", "image": "x", "resources": {"limits": {GPU: gpus}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**meta, "namespace": "ml"},
        "spec": {"containers": [container], **spec},
    }


def _deployment(name: str, replicas: int, gpus: int = 1) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": name}}, "spec": _pod(name, gpus)["spec"]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template},
    }


# ----------------------------------------------------------------------- convert's own output


def test_a_generate_name_pod_from_convert_is_simulated_under_the_reports_name() -> None:
    converted = _convert([_pod("train", generate=True)])
    code, body, err = _simulate([*_cluster(), *converted])
    assert code == 0, err
    (pod,) = body["pods"]
    assert pod["name"] == "train-(not yet named)" and pod["outcome"] == "allocated" and pod["node"] == "node-a"
    (claim,) = body["claims"]
    assert claim["name"] == "train-(not yet named)-gpu" and claim["outcome"] == "allocated"


def test_two_generate_name_pods_of_one_prefix_are_two_pods() -> None:
    converted = _convert([_pod("train", generate=True), _pod("train", generate=True)])
    code, body, err = _simulate([*_cluster(), *converted])
    assert code == 0, err
    assert [(p["name"], p["node"]) for p in body["pods"]] == [
        ("train-(not yet named)", "node-a"),
        ("train-(not yet named)#2", "node-b"),
    ]


def test_convert_of_every_example_is_simulated_pod_by_pod() -> None:
    code, out, err = _command(["convert", "--include-custom-resources", "-f", str(EXAMPLES)])
    assert code == 0, err
    converted = [d for d in yaml.safe_load_all(out) if d]
    code, body, err = _simulate([*_cluster(nodes=8, gpus=8), *converted])
    assert code == 2 and "dra-migrate: error" not in err, err
    pods = {p["name"]: p for p in body["pods"]}
    assert pods["vllm-qwen7b-deployment-vllm-0"]["outcome"] == "allocated"
    # The LeaderWorkerSet's two pod templates are simulated as pods of their own.
    # The LeaderWorkerSet's pods, as many as the capacity check counts (2 groups of 2 pods).
    lws = ["vllm-leader-0", "vllm-leader-1", "vllm-worker-0", "vllm-worker-1"]
    assert all(pods[name]["outcome"] == "allocated" for name in lws), [pods[name] for name in lws]
    # Each pod went to a node of its own choosing, not all to one.
    assert len({p["node"] for p in pods.values() if p["node"]}) == 5
    # A pod whose GPU model no node has says which selector matched nothing.
    assert "request plugin-test-ctr-gpu: no device of the 8 eligible nodes matches" in pods["plugin-test-0"]["reason"]
    # The pod convert kept legacy is refused by name, not passed over.
    assert [r["object"] for r in body["refused"]] == ["Pod team-a/init-sidecar-app"]


# ----------------------------------------------------------------------- one node per pod


def test_each_pod_goes_to_the_first_node_where_its_claims_fit() -> None:
    converted = _convert([_deployment("serve", replicas=2)])
    code, body, err = _simulate([*_cluster(nodes=2, gpus=1), *converted])
    assert code == 0, err
    assert [(p["name"], p["node"]) for p in body["pods"]] == [("serve-0", "node-a"), ("serve-1", "node-b")]
    assert [c["node"] for c in body["claims"]] == ["node-a", "node-b"]
    assert "node" not in body  # no single node for the whole input


def test_node_flag_keeps_every_pod_on_that_node() -> None:
    converted = _convert([_deployment("serve", replicas=2)])
    code, body, err = _simulate([*_cluster(nodes=2, gpus=1), *converted], "--node", "node-b")
    assert code == 2
    assert "ResourceClaim ml/serve-1-gpu: unsatisfiable: cannot allocate all claims of its pod on node node-b: " in err
    assert [(p["node"], p["outcome"]) for p in body["pods"]] == [("node-b", "allocated"), (None, "unsatisfiable")]


# ----------------------------------------------------------------------- custom resources


def test_a_custom_resource_is_simulated_through_its_pod_templates_as_many_pods_as_it_makes() -> None:
    lws = yaml.safe_load((EXAMPLES / "19-lws-leader-worker-eight-gpus.yaml").read_text())
    converted = _convert([lws], "--include-custom-resources")
    code, body, err = _simulate([*_cluster(nodes=4, gpus=8), *converted])
    assert code == 0, err
    assert [(p["name"], p["node"]) for p in body["pods"]] == [
        ("vllm-leader-0", "node-a"),
        ("vllm-leader-1", "node-b"),
        ("vllm-worker-0", "node-c"),
        ("vllm-worker-1", "node-d"),
    ]
    assert "LeaderWorkerSet team-a/vllm: simulated as 2 leader (spec.replicas 2: one leader a group), 2 worker" in err


def test_kserve_pod_specs_are_simulated_as_the_pods_they_make() -> None:
    services = list(yaml.safe_load_all((CUSTOM / "kserve-inferenceservice.yaml").read_text()))
    converted = _convert([services[0]], "--include-custom-resources")
    code, body, err = _simulate([*_cluster(nodes=2, gpus=2), *converted])
    assert code == 0, err
    assert [(p["name"], p["node"]) for p in body["pods"]] == [
        ("llama-70b-predictor-0", "node-a"),
        ("llama-70b-predictor-worker-0", "node-b"),
    ]


def test_argo_templates_are_refused_by_name() -> None:
    workflows = [d for d in yaml.safe_load_all((CUSTOM / "argo-workflows.yaml").read_text()) if d]
    converted = _convert(workflows, "--include-custom-resources")
    code, body, err = _simulate([*_cluster(), *converted])
    assert code == 2
    refused = [r["object"] for r in body["refused"]]
    assert refused and all(
        r.startswith(("Workflow ", "WorkflowTemplate ", "CronWorkflow ", "ClusterWorkflowTemplate ")) for r in refused
    )
    assert f"{refused[0]}: not simulated: " in err


def test_a_custom_resource_left_with_device_plugin_requests_is_refused_by_name() -> None:
    lws = yaml.safe_load((EXAMPLES / "19-lws-leader-worker-eight-gpus.yaml").read_text())
    converted = _convert([lws])  # without --include-custom-resources: left for the webhook
    code, body, err = _simulate([*_cluster(), *converted])
    assert code == 2
    assert "LeaderWorkerSet team-a/vllm: not simulated" in err
    assert body["refused"][0]["object"] == "LeaderWorkerSet team-a/vllm"


def test_a_custom_resource_with_no_pod_template_is_refused_and_never_exits_0() -> None:
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf", "namespace": "ml"},
        "spec": {"templates": [{"name": "t", "container": {"image": "x", "resources": {"limits": {GPU: 1}}}}]},
    }
    code, _, err = _simulate([*_cluster(), workflow])
    assert code == 2
    assert "Workflow ml/wf: not simulated" in err and "spec.templates[0].container" in err


def test_input_with_nothing_to_simulate_is_an_error() -> None:
    code, _, err = _simulate(_cluster())
    assert code == 1 and "nothing to simulate" in err


# ----------------------------------------------------------------------- duplicates


def test_the_same_object_twice_is_a_warning_and_the_later_one_counts() -> None:
    first, second = _convert([_pod("p", gpus=1)]), _convert([_pod("p", gpus=2)])
    code, body, err = _simulate([*_cluster(nodes=1, gpus=2), *first, *second])
    assert code == 0, err
    assert re.search(r"warning: Pod ml/p appears 2 times \(-#\d+, -#\d+\): the last one counts", err)
    assert body["warnings"] and "Pod ml/p" in body["warnings"][0]
    (pod,) = body["pods"]
    assert pod["name"] == "p" and pod["outcome"] == "allocated"
    (claim,) = body["claims"]
    assert len(claim["allocation"]["devices"]["results"]) == 2


def test_the_examples_duplicates_are_named() -> None:
    code, out, err = _command(["convert", "-f", str(EXAMPLES)])
    assert code == 0, err
    converted = [d for d in yaml.safe_load_all(out) if d]
    _, body, err = _simulate([*_cluster(nodes=8, gpus=8), *converted])
    assert "warning: Pod team-a/gpu-pod appears 2 times" in err, err
    assert [p["name"] for p in body["pods"]].count("gpu-pod") == 1


# ----------------------------------------------------------------------- why a pod fits nowhere


def test_a_pod_that_fits_nowhere_says_which_request_needs_more_devices() -> None:
    converted = _convert([_pod("big", gpus=3)])
    code, body, _ = _simulate([*_cluster(nodes=2, gpus=2), *converted])
    assert code == 2
    (claim,) = body["claims"]
    assert claim["outcome"] == "unsatisfiable"
    assert "request c-gpu needs 3 devices of class nvidia-gpu.dra-bridge.io: at most 2 free" in claim["reason"]


def test_a_selector_nothing_matches_is_named() -> None:
    converted = _convert([_pod("p")])
    template = next(d for d in converted if d["kind"] == "ResourceClaimTemplate")
    selector = 'device.attributes["dra-bridge.io"].index == 7'
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": selector}}]
    code, body, err = _simulate([*_cluster(nodes=2, gpus=2), *converted])
    assert code == 2
    (claim,) = body["claims"]
    assert "request c-gpu: no device of the 2 eligible nodes matches" in claim["reason"]
    assert f"selector `{selector}`" in claim["reason"]
    assert "ResourceClaim ml/p-gpu: unsatisfiable: " in err


def test_a_constraint_that_keeps_free_devices_apart_is_named() -> None:
    request = {"exactly": {"deviceClassName": "nvidia-gpu.dra-bridge.io", "count": 1}}
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "pair", "namespace": "ml"},
        "spec": {
            "devices": {
                "requests": [{"name": "a", **request}, {"name": "b", **request}],
                "constraints": [{"requests": ["a", "b"], "matchAttribute": "dra-bridge.io/index"}],
            }
        },
    }
    code, body, _ = _simulate([*_cluster(nodes=1, gpus=2), claim])
    assert code == 2
    (outcome,) = body["claims"]
    assert "but not together: a claim constraint cannot be satisfied" in outcome["reason"]
    assert "claim pair: matchAttribute dra-bridge.io/index over a, b" in outcome["reason"]
