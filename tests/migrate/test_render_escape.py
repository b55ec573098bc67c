"""Caller-controlled text (names, namespaces, resource names, reasons quoting values, file
names) reaches the terminal escaped in every text renderer of dra-migrate
(:func:`dra_bridge.kube.logs.escape`): no raw newline breaks a row, no ESC sequence is live;
markdown cells escape ``|`` too; HTML shows a newline as ``\\n``; JSON and YAML stay exact."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.migrate.cli import main

BAD = "bad\nname\x1b[31mRED"
BAD_SHOWN = "bad\\nname\\x1b[31mRED"
BAD_RESOURCE = "nvidia.com/gpu\x1b[2J"


def _deployment(name: str = BAD, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ml|team"},
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {resource: 1}}}]}},
        },
    }


def _run(argv: list[str], objects: list[dict[str, Any]]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdin=io.StringIO(yaml.safe_dump_all(objects)), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _report(fmt: str, obj: dict[str, Any]) -> str:
    code, out, err = _run(["report", "-f", "-", "--kubernetes-version", "1.36", "-o", fmt], [obj])
    assert code == 0, err
    return out


def _clean(text: str) -> None:
    assert "\x1b" not in text, text


@pytest.mark.parametrize("fmt", ["table", "wide"])
def test_report_table_keeps_a_hostile_name_on_its_row_escaped(fmt: str) -> None:
    out = _report(fmt, _deployment())
    _clean(out)
    row = next(line for line in out.splitlines() if "Deployment/" in line)
    assert f"Deployment/ml|team/{BAD_SHOWN}" in row, out
    assert "RED" not in out.replace(row, ""), out  # the name did not spill onto another line


def test_report_wide_escapes_a_resource_name_in_the_reason() -> None:
    out = _report("wide", _deployment(name="ok", resource=BAD_RESOURCE))
    _clean(out)
    assert "nvidia.com/gpu\\x1b[2J" in out, out


def test_report_markdown_escapes_the_name_and_the_pipe_in_cells() -> None:
    out = _report("markdown", _deployment())
    _clean(out)
    row = next(line for line in out.splitlines() if line.startswith("| `Deployment/"))
    assert f"`Deployment/ml\\|team/{BAD_SHOWN}`" in row, out
    assert row.count(" | ") == 7, row  # eight cells: the pipe in the namespace split none
    summary = next(line for line in out.splitlines() if line.startswith("<details>"))
    assert BAD_SHOWN in summary, out


def test_report_html_shows_a_newline_in_a_cell_visibly() -> None:
    out = _report("html", _deployment())
    _clean(out)
    assert "bad\nname" not in out
    assert BAD_SHOWN in out, out


def test_report_json_and_convert_yaml_stay_exact() -> None:
    doc = json.loads(_report("json", _deployment()))
    assert doc["workloads"][0]["name"] == BAD
    code, out, _ = _run(["convert", "-f", "-"], [_deployment()])
    assert code == 0
    kinds = {d["kind"]: d for d in yaml.safe_load_all(out)}
    assert kinds["Deployment"]["metadata"]["name"] == BAD


def test_convert_findings_table_escapes_names_and_file_names(tmp_path: Path) -> None:
    path = tmp_path / "we\x1bird\n.yaml"
    path.write_text(yaml.safe_dump(_deployment(resource="nvidia.com/mig-9g.99gb\x1b[2J")))
    out, err = io.StringIO(), io.StringIO()
    code = main(["convert", "-f", str(path)], stdin=io.StringIO(""), stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    _clean(err.getvalue())
    rows = err.getvalue().splitlines()
    assert len(rows) >= 2 and all("we\\x1bird\\n.yaml" in r for r in rows[1:]), rows
    assert any(BAD_SHOWN in r for r in rows[1:]), rows


def test_simulate_messages_escape_names() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}}
    code, out, err = _run(["simulate", "-f", "-", "-o", "json"], [_deployment(), node])
    assert code == 2, err
    _clean(err)
    assert BAD_SHOWN in err, err
    assert json.loads(out)["refused"][0]["object"].endswith(BAD)  # JSON exact
