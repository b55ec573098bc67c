"""``dra-migrate report``'s capacity section (docs/capacity.md): converted claims and the legacy
model placed on the cluster's devices, per workload and per node pool, in every output."""

from __future__ import annotations

import io
import json
import shutil
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from dra_bridge.migrate.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
SCHEMA = json.loads(files("dra_bridge.translate").joinpath("data/report-v2.schema.json").read_text())
H100 = "NVIDIA-H100-80GB-HBM3"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def as_json(*argv: str) -> dict[str, Any]:
    code, out, err = run("report", *argv, "-o", "json", "--kubernetes-version", "1.36")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc


def node(name: str, gpus: int, product: str = H100) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": product}},
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}},
    }


def deployment(name: str, replicas: int, gpus: int, priority: int | None = None, **spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "containers": [{"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        **spec,
    }
    if priority is not None:
        pod["priority"] = priority
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod},
        },
    }


def write(tmp: Path, name: str, *docs: dict[str, Any]) -> str:
    path = tmp / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def workloads(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in doc["workloads"]}


def test_cumulative_first_fit_in_priority_order_with_reasons(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "in.yaml",
        node("n1", 2),
        node("n2", 2),
        deployment("big", 3, 2),
        deployment("urgent", 1, 1, priority=1000),
    )
    doc = as_json("-f", f)
    w = workloads(doc)
    urgent, big = w["urgent"]["capacity"], w["big"]["capacity"]
    assert urgent["fits"] is True and urgent["node"] == "n1" and urgent["order"] == 0
    assert [(p["fits"], p["node"]) for p in big["pods"]] == [(True, "n2"), (False, None), (False, None)]
    assert big["fits"] is False and big["pods"][1]["code"] == "not-enough-devices"
    assert "needs 2" in big["reason"] and big["legacyFits"] is False
    assert big["podsFit"] == 1 and big["legacyPodsFit"] == 1
    pool = {p["name"]: p for p in doc["nodePools"]}[H100]["capacity"]
    assert (pool["devices"], pool["usedBefore"], pool["usedAfter"]) == (4, 0, 3)
    assert pool["legacyAllocatable"] == {"nvidia.com/gpu": 4} and pool["legacyUsedAfter"] == {"nvidia.com/gpu": 3}
    cap = doc["capacity"]
    assert cap["deviceSources"] == {"n1": "node", "n2": "node"}
    assert cap["totals"]["pods"] == 4 and cap["totals"]["fit"] == 2 and cap["totals"]["unschedulable"] == 2


def test_inventory_dump_as_input_file_names_its_node_and_source(tmp_path: Path) -> None:
    shutil.copy(DATA / "bridge" / "h100-x8.podresources.json", tmp_path / "gpu-node.json")
    f = write(tmp_path, "in.yaml", node("gpu-node", 0), node("plain", 1), deployment("eight", 1, 8))
    doc = as_json("-f", f, "-f", str(tmp_path / "gpu-node.json"))
    assert doc["capacity"]["deviceSources"] == {"gpu-node": "inventory", "plain": "node"}
    eight = workloads(doc)["eight"]["capacity"]
    assert (eight["fits"], eight["node"], eight["legacyFits"]) == (True, "gpu-node", False)
    assert eight["placesDifferently"] is True
    assert doc["inputs"]["inventories"] == {"gpu-node": str(tmp_path / "gpu-node.json")}


def test_inventory_flag_and_unknown_node_is_an_input_error(tmp_path: Path) -> None:
    dump = str(DATA / "bridge" / "h100-x8.podresources.json")
    f = write(tmp_path, "in.yaml", node("n1", 0), deployment("two", 1, 2))
    doc = as_json("-f", f, "--inventory", f"n1={dump}")
    assert doc["capacity"]["deviceSources"] == {"n1": "inventory"}
    code, out, err = run("report", "-f", f, "--inventory", f"ghost={dump}")
    assert code == 1 and out == "" and "ghost" in err and "Traceback" not in err


def test_alignment_says_whether_aligned_placement_still_fits(tmp_path: Path) -> None:
    dump = str(DATA / "bridge" / "h100-x8.podresources.json")
    f = write(tmp_path, "in.yaml", node("synthetic", 8), deployment("pair", 1, 2))
    on_node = workloads(as_json("-f", f, "--alignment", "numa"))["pair"]
    assert on_node["alignment"]["status"] == "kept" and on_node["alignment"]["placementFits"] is False
    assert on_node["capacity"]["pods"][0]["code"] == "constraint"
    f2 = write(tmp_path, "in2.yaml", node("real", 0), deployment("pair", 1, 2))
    with_dump = workloads(as_json("-f", f2, "--inventory", f"real={dump}", "--alignment", "numa"))["pair"]
    assert with_dump["alignment"]["placementFits"] is True


def test_no_capacity_switch_leaves_the_sections_null(tmp_path: Path) -> None:
    f = write(tmp_path, "in.yaml", node("n1", 2), deployment("one", 1, 1))
    doc = as_json("-f", f, "--no-capacity")
    assert doc["capacity"] is None and workloads(doc)["one"]["capacity"] is None
    assert all(p["capacity"] is None for p in doc["nodePools"])


def test_table_markdown_and_wide_show_capacity(tmp_path: Path) -> None:
    f = write(tmp_path, "in.yaml", node("n1", 2), deployment("big", 3, 1))
    code, table, _ = run("report", "-f", f)
    assert code == 0
    header = table.splitlines()[0].split()
    assert "FIT" in header
    row = next(line for line in table.splitlines() if "Deployment/ml/big" in line)
    assert "2/3" in row.split()
    assert "capacity: 2 of 3 converted pods fit (legacy 2 of 3)" in table
    assert f"{H100}: DRA devices 0 -> 2 of 2 used; legacy nvidia.com/gpu 0 -> 2 of 2" in table
    _, wide, _ = run("report", "-f", f, "-o", "wide")
    assert "LEGACY-FIT" in wide.splitlines()[0]
    _, md, _ = run("report", "-f", f, "-o", "markdown")
    assert "### Capacity" in md and "| ml/big-2 |" in md.replace("`", "")


def test_shipped_cluster_dump_gives_a_capacity_section() -> None:
    doc = as_json("-f", str(DATA / "examples"), "-f", str(DATA / "report"))
    assert doc["capacity"]["deviceSources"] == {"a100-a": "slices", "h100-a": "node", "h100-b": "slices"}
    pools = {p["name"]: p["capacity"] for p in doc["nodePools"]}
    assert pools[H100]["devices"] == 12 and pools[H100]["usedAfter"] > 0
    assert doc["capacity"]["totals"]["fit"] > 0


def test_inventory_dump_on_stdin_names_no_node() -> None:
    out, err = io.StringIO(), io.StringIO()
    dump = (DATA / "bridge" / "h100-x8.podresources.json").read_text()
    code = main(["report", "-f", "-"], stdin=io.StringIO(dump), stdout=out, stderr=err)
    assert code == 1 and out.getvalue() == "" and "--inventory NODE=FILE" in err.getvalue()


def test_a_workload_asking_for_no_device_is_not_counted(tmp_path: Path) -> None:
    """A live report lists every workload (MIGRATION.md step 1); the webhook's own Deployment,
    asking for no device, is no "converted pod" of the capacity totals."""
    web = deployment("web", 2, 1)
    web["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    f = write(tmp_path, "in.yaml", node("n1", 2), deployment("train", 1, 1), web)
    doc = as_json("-f", f)
    assert workloads(doc)["web"]["capacity"] is None
    assert doc["capacity"]["totals"]["pods"] == 1 and doc["capacity"]["totals"]["fit"] == 1
    code, out, _ = run("report", "-f", f, "--kubernetes-version", "1.36")
    assert code == 0 and "capacity: 1 of 1 converted pods fit (legacy 1 of 1)" in out, out
