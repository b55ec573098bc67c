"""``dra-migrate report`` is given every enrolment setting the chart has (``--namespace-label``,
``--opt-out-label``, ``--namespace-selector``, ``--object-selector``) and judges each workload's
pod template labels as the registration's objectSelector would (translate/enrolment.py)."""

from __future__ import annotations

import io
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from dra_bridge.migrate.cli import main

SCHEMA = json.loads(files("dra_bridge.translate").joinpath("data/report-v2.schema.json").read_text())
GPU = {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}}
NO_DRA = '{"matchExpressions": [{"key": "example.com/no-dra", "operator": "DoesNotExist"}]}'
TENANTS = '{"matchLabels": {"example.com/gpu-tenant": "true"}}'


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def deployment(name: str, ns: str, labels: dict[str, str]) -> dict[str, Any]:
    template = {"metadata": {"labels": labels}, "spec": {"containers": [GPU]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"template": template},
    }


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def report(tmp_path: Path, docs: list[dict[str, Any]], *flags: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    code, out, err = run("report", "-f", str(path), "-o", "json", "--kubernetes-version", "1.34", *flags)
    assert code == 0, err
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc, {w["name"]: w for w in doc["workloads"]}


def test_a_workload_the_object_selector_excludes_is_not_enrolled(tmp_path: Path) -> None:
    docs = [
        namespace("ml", {"dra-bridge.io/webhook": "enforce"}),
        deployment("kept", "ml", {"app": "kept", "example.com/no-dra": "yes"}),
        deployment("sent", "ml", {"app": "sent"}),
    ]
    doc, by_name = report(tmp_path, docs, "--object-selector", NO_DRA)
    assert (by_name["kept"]["path"], by_name["kept"]["enrolment"]["mode"]) == ("not-enrolled", "none")
    assert "objectSelector" in by_name["kept"]["pathReason"]
    assert (by_name["sent"]["path"], by_name["sent"]["enrolment"]["mode"]) == ("needs-conversion", "enforce")
    assert doc["inputs"]["enrolment"]["objectSelector"] == json.loads(NO_DRA)
    _, unfiltered = report(tmp_path, docs)  # without the flag both are sent
    assert unfiltered["kept"]["path"] == "needs-conversion"


def test_a_namespace_the_extra_terms_exclude_is_not_enrolled(tmp_path: Path) -> None:
    docs = [
        namespace("tenant", {"dra-bridge.io/webhook": "enforce", "example.com/gpu-tenant": "true"}),
        namespace("other", {"dra-bridge.io/webhook": "enforce"}),
        deployment("a", "tenant", {"app": "a"}),
        deployment("b", "other", {"app": "b"}),
    ]
    doc, by_name = report(tmp_path, docs, "--namespace-selector", TENANTS)
    assert by_name["a"]["path"] == "needs-conversion"
    assert by_name["b"]["path"] == "not-enrolled" and "namespaceSelector" in by_name["b"]["pathReason"]
    assert doc["inputs"]["enrolment"]["namespaceSelector"] == json.loads(TENANTS)


def test_the_charts_own_labels_are_given_by_flag(tmp_path: Path) -> None:
    docs = [
        namespace("mine", {"team.example/dra": "enforce"}),
        namespace("out", {"team.example/dra": "enforce", "team.example/no-dra": ""}),
        namespace("default-label", {"dra-bridge.io/webhook": "enforce"}),
        deployment("mine", "mine", {}),
        deployment("out", "out", {}),
        deployment("default-label", "default-label", {}),
    ]
    flags = ("--namespace-label", "team.example/dra", "--opt-out-label", "team.example/no-dra")
    doc, by_name = report(tmp_path, docs, *flags)
    assert {n: w["path"] for n, w in by_name.items()} == {
        "mine": "needs-conversion",
        "out": "not-enrolled",
        "default-label": "not-enrolled",
    }
    assert doc["inputs"]["enrolment"]["modeLabel"] == "team.example/dra"
    assert doc["inputs"]["enrolment"]["optOutLabel"] == "team.example/no-dra"


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--namespace-selector", "{nope"),
        ("--object-selector", '{"matchExpressions": [{"key": "a", "operator": "Has"}]}'),
        ("--namespace-label", "a b"),
    ],
)
def test_a_bad_enrolment_flag_is_one_line_naming_it(tmp_path: Path, flag: str, value: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(deployment("a", "ml", {})))
    code, out, err = run("report", "-f", str(path), flag, value)
    assert (code, out) == (1, "") and err.count("\n") == 1 and flag in err, err
