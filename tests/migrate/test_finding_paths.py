"""Every finding and risk path is a complete path into the object as given (no trailing ``.``,
each segment there), for every shipped example and custom resource, in ``report`` and in
``convert --include-custom-resources``."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.migrate.cli import main
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.pod_plan import Options
from dra_bridge.translate.plan.workloads import convert_object

DATA = Path(__file__).parents[1] / "data"
INPUTS = sorted([*(DATA / "examples").glob("*.yaml"), *(DATA / "custom-resources").glob("*.yaml")])
_SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _segments(path: str) -> list[str | int]:
    out: list[str | int] = []
    pos = 0
    while pos < len(path):
        match = _SEGMENT.match(path, pos)
        assert match and match.end() > pos, f"{path!r}: not a path at {pos}"
        name, key = match[1], match[2]
        out.append(name if name is not None else int(key) if key.isdigit() else key)
        pos = match.end()
    return out


def _resolves(objs: list[Any], path: str) -> bool:
    """Whether ``path`` walks into one of ``objs`` (the input, or the converted output for a key
    the conversion writes); ``.`` is the object itself."""
    if path == ".":
        return True
    for obj in objs:
        node = obj
        for part in _segments(path):
            if isinstance(part, int) and isinstance(node, list) and part < len(node):
                node = node[part]
            elif isinstance(node, dict) and str(part) in node:
                node = node[str(part)]
            else:
                break
        else:
            return True
    return False


def test_the_path_walker_reads_keys_with_dots_and_indexes() -> None:
    obj = {"spec": {"c": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    assert _resolves([obj], "spec.c[0].resources.limits[nvidia.com/gpu]")
    assert not _resolves([obj], "spec.c[1]") and not _resolves([obj], "spec.d")
    assert _segments("a[0].b[x.y/z].c") == ["a", 0, "b", "x.y/z", "c"]


@pytest.mark.parametrize("path", INPUTS, ids=[p.stem for p in INPUTS])
def test_report_paths_are_complete_and_resolve(tmp_path: Path, path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["report", "-f", str(path), "-o", "json", "--no-capacity"], stdout=out, stderr=err) == 0, err.getvalue()
    docs = _docs(path)
    bad = []
    for w in json.loads(out.getvalue())["workloads"]:
        obj = docs[int(w["source"].rsplit("#", 1)[1]) - 1]
        assert obj["kind"] == w["kind"]
        for item in [*w["findings"], *w["risks"]]:
            p = item["path"]
            if (p.endswith(".") and p != ".") or not _resolves([obj], p):
                bad.append(f"{w['kind']}/{w['name']}: {item.get('code') or item.get('outcome')} {p}")
    assert not bad


@pytest.mark.parametrize("path", INPUTS, ids=[p.stem for p in INPUTS])
def test_convert_finding_paths_are_complete_and_resolve(catalog: Catalog, path: Path) -> None:
    bad = []
    for obj in _docs(path):
        converted = convert_object(obj, catalog, Options(), include_custom_resources=True)
        for f in converted.findings:
            if (f.path.endswith(".") and f.path != ".") or not _resolves([obj, converted.obj], f.path):
                bad.append(f"{obj['kind']}/{obj['metadata'].get('name')}: {f.outcome} {f.path}")
    assert not bad
