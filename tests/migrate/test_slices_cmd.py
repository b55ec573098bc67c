"""``dra-migrate slices`` (migrate/slices_cmd.py) over the sample dumps in tests/data/bridge/."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_OK
from dra_bridge.migrate.slices_cmd import run_slices

DATA = Path(__file__).resolve().parents[1] / "data" / "bridge"


def run(node: str, dump: str, labels: str | None, version: str = "v1") -> tuple[int, list[dict[str, Any]], str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_slices(node, str(DATA / dump), str(DATA / labels) if labels else None, version, None, out, err)
    return code, [d for d in yaml.safe_load_all(out.getvalue()) if d], err.getvalue()


def devices(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["attributes"]["dra-bridge.io/deviceID"]["string"]: d for s in docs for d in s["spec"]["devices"]}


def test_a100_mixed_mig_dump_gives_gpus_and_mig_devices_and_warns_about_unknown_resources() -> None:
    code, docs, err = run("gpu-a100-1", "a100-mixed-mig.podresources.json", "a100-mixed-mig.labels.yaml")
    assert code == EXIT_OK
    by_id = devices(docs)
    assert len(by_id) == 6
    mig = by_id["MIG-4d806f22-346a-5a1d-ac01-86b505cdf483"]
    assert mig["attributes"]["gpu.nvidia.com/profile"] == {"string": "1g.5gb+me"}
    assert by_id["MIG-4d806f22-346a-5a1d-ac01-86b505cdf484"]["capacity"]["gpu.nvidia.com/memory"] == {
        "value": "19968Mi"
    }
    assert by_id["GPU-1c8a8b7e-5d1e-4b53-9a1b-0c37f1e2a002"]["attributes"]["dra-bridge.io/numaNodes"] == {
        "string": "0,1"
    }
    assert "example.com/fpga" in err


def test_time_sliced_l4_dump_gives_one_device_per_replica() -> None:
    code, docs, _ = run("gpu-l4-1", "l4-timesliced.podresources.json", "l4-timesliced.labels.json")
    assert code == EXIT_OK
    by_id = devices(docs)
    assert len(by_id) == 8
    assert by_id["GPU-9e0b2c1d-0000-4000-8000-000000000001::3"]["attributes"]["gpu.nvidia.com/uuid"] == {
        "string": "GPU-9e0b2c1d-0000-4000-8000-000000000001"
    }
    assert by_id["GPU-9e0b2c1d-0000-4000-8000-000000000001::3"]["attributes"]["gpu.nvidia.com/architecture"] == {
        "string": "Ada Lovelace"
    }


def test_node_object_as_labels_and_v1beta1_shape() -> None:
    code, docs, _ = run("gpu-h100-1", "h100-x8.podresources.json", "h100-x8.node.yaml", "resource.k8s.io/v1beta1")
    assert code == EXIT_OK
    (only,) = docs
    assert only["apiVersion"] == "resource.k8s.io/v1beta1"
    first = only["spec"]["devices"][0]["basic"]
    assert first["attributes"]["gpu.nvidia.com/productName"] == {"string": "NVIDIA-H100-80GB-HBM3"}
    assert first["attributes"]["gpu.nvidia.com/driverVersion"] == {"version": "580.126.20"}


def test_without_labels_only_kubelet_facts_are_published() -> None:
    code, docs, _ = run("gpu-h100-1", "h100-x8.podresources.json", None)
    assert code == EXIT_OK
    attrs = docs[0]["spec"]["devices"][0]["attributes"]
    assert "gpu.nvidia.com/productName" not in attrs and attrs["gpu.nvidia.com/type"] == {"string": "gpu"}


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "cannot read"),
        ('{"devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": [1]}]}', "devices[0].deviceIds"),
        ("{: not json", "neither JSON nor YAML"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", "a Pod, not a PodResources AllocatableResourcesResponse"),
        ('{"spec": {}}', "unknown field spec (an AllocatableResourcesResponse has devices, cpuIds"),
    ],
    ids=["missing", "bad-field", "garbage", "a-kubernetes-object", "unknown-field"],
)
def test_bad_dump_exits_1_naming_the_file_and_field(tmp_path: Path, content: str | None, needle: str) -> None:
    path = tmp_path / "dump.json"
    if content is not None:
        path.write_text(content)
    out, err = io.StringIO(), io.StringIO()
    assert run_slices("n", str(path), None, "v1", None, out, err) == EXIT_ERROR
    assert str(path) in err.getvalue() and needle in err.getvalue()
    assert out.getvalue() == ""


def test_bad_labels_and_version_are_errors(tmp_path: Path) -> None:
    labels = tmp_path / "labels.yaml"
    labels.write_text("- a list\n")
    err = io.StringIO()
    dump = str(DATA / "h100-x8.podresources.json")
    assert run_slices("n", dump, str(labels), "v1", None, io.StringIO(), err) == EXIT_ERROR
    assert "labels.yaml" in err.getvalue()
    assert run_slices("n", dump, None, "v2", None, io.StringIO(), err) == EXIT_ERROR


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_output_passes_the_kubernetes_openapi_schema(version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    _, docs, _ = run("gpu-a100-1", "a100-mixed-mig.podresources.json", "a100-mixed-mig.labels.yaml", version)
    for doc in docs:
        kubernetes_validate.validate(doc, "1.34", strict=True)


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("kind: Node\nmetadata: 5\n", "metadata"),
        ("kind: Node\nmetadata: [a]\n", "metadata"),
        ("kind: Node\nmetadata: null\n", "metadata"),
        ("kind: Node\nmetadata: {labels: 5}\n", "metadata.labels"),
        ("kind: Node\nmetadata: {labels: 0}\n", "metadata.labels"),
        ("kind: Node\nmetadata: {labels: [a]}\n", "metadata.labels"),
        ("kind: Node\nmetadata: {labels: {a: [1]}}\n", "metadata.labels.a"),
        ("kind: Node\nmetadata: {labels: {a: null}}\n", "metadata.labels.a"),
        ("kind: Node\nmetadata: {labels: {1: a}}\n", "metadata.labels.1"),
        ("a: {b: c}\n", "a:"),
        ("1: a\n", "1:"),
        ("a: 2020-01-01\n", "a:"),
        ("just a string\n", "(top level)"),
        ("5\n", "(top level)"),
        ("- a list\n", "(top level)"),
        ("", "(top level)"),
    ],
    ids=[
        "node-metadata-int",
        "node-metadata-list",
        "node-metadata-null",
        "node-labels-int",
        "node-labels-zero",
        "node-labels-list",
        "label-value-list",
        "label-value-null",
        "label-key-int",
        "map-value-map",
        "map-key-int",
        "map-value-date",
        "string",
        "int",
        "list",
        "empty",
    ],
)
def test_malformed_labels_file_exits_1_with_one_line_naming_file_and_field(
    tmp_path: Path, content: str, field: str
) -> None:
    labels = tmp_path / "labels.yaml"
    labels.write_text(content)
    out, err = io.StringIO(), io.StringIO()
    dump = str(DATA / "h100-x8.podresources.json")
    assert run_slices("n", dump, str(labels), "v1", None, out, err) == EXIT_ERROR
    message = err.getvalue()
    assert message.count("\n") == 1 and message.startswith(f"dra-migrate slices: {labels}: {field}")
    assert out.getvalue() == ""


def test_node_object_without_labels_has_no_labels(tmp_path: Path) -> None:
    labels = tmp_path / "node.yaml"
    labels.write_text("kind: Node\nmetadata: {name: n, labels: null}\n")
    err = io.StringIO()
    assert (
        run_slices("n", str(DATA / "h100-x8.podresources.json"), str(labels), "v1", None, io.StringIO(), err) == EXIT_OK
    ), err.getvalue()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"[" * 5_000, "nested too deeply"),
        (b"a: " + b"[" * 3_000, "nested too deeply"),
        (b"--- a\n--- b\n", "line 2, column 1"),
        (b"!!python/object:os.system {}\n", "line 1, column 1"),
        (b"? [a]\n: b\n", "unhashable key"),
        (b"\x00", "neither JSON nor YAML"),
    ],
    ids=["not-utf8", "deep-json", "deep-yaml", "two-documents", "python-tag", "unhashable-key", "nul"],
)
@pytest.mark.parametrize("which", ["podresources", "node-labels", "catalog"])
def test_unparseable_files_exit_1_with_one_line(tmp_path: Path, content: bytes, needle: str, which: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(content)
    dump = str(bad if which == "podresources" else DATA / "h100-x8.podresources.json")
    labels = str(bad) if which == "node-labels" else None
    catalog = str(bad) if which == "catalog" else None
    out, err = io.StringIO(), io.StringIO()
    assert run_slices("n", dump, labels, "v1", catalog, out, err) == EXIT_ERROR
    message = err.getvalue()
    assert message.count("\n") == 1 and message.startswith(f"dra-migrate slices: {bad}"), message
    if which != "catalog":  # the catalog's parse errors are translate's
        assert needle in message, message
    assert out.getvalue() == ""


def test_a_node_list_of_one_node_gives_the_same_slices_as_the_node(tmp_path: Path) -> None:
    node = yaml.safe_load((DATA / "h100-x8.node.yaml").read_text())
    as_list = tmp_path / "nodes.yaml"
    as_list.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "NodeList", "items": [node]}))
    out_a, out_b, err = io.StringIO(), io.StringIO(), io.StringIO()
    assert (
        run_slices(
            "gpu-h100-1",
            str(DATA / "h100-x8.podresources.json"),
            str(DATA / "h100-x8.node.yaml"),
            "v1",
            None,
            out_a,
            err,
        )
        == EXIT_OK
    )
    assert (
        run_slices("gpu-h100-1", str(DATA / "h100-x8.podresources.json"), str(as_list), "v1", None, out_b, err)
        == EXIT_OK
    )
    assert out_a.getvalue() == out_b.getvalue()
    as_list.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "NodeList", "items": [node, node]}))
    assert (
        run_slices("gpu-h100-1", str(DATA / "h100-x8.podresources.json"), str(as_list), "v1", None, io.StringIO(), err)
        == EXIT_ERROR
    )
    assert "exactly one Node" in err.getvalue()


def test_unquoted_numeric_label_values_are_refused_not_rounded(tmp_path: Path) -> None:
    labels = tmp_path / "labels.yaml"
    labels.write_text("nvidia.com/cuda.runtime-version.full: 12.10\n")
    err = io.StringIO()
    assert (
        run_slices("n", str(DATA / "h100-x8.podresources.json"), str(labels), "v1", None, io.StringIO(), err)
        == EXIT_ERROR
    )
    assert "quote it" in err.getvalue()


def test_a_dump_without_devices_warns_that_the_slice_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    path.write_text("{}")
    out, err = io.StringIO(), io.StringIO()
    assert run_slices("n", str(path), None, "v1", None, out, err) == EXIT_OK
    assert f"warning: {path}: no devices" in err.getvalue()
