"""``convert`` does not copy what the conversion leaves alone (issue 25: convert's own cost): its
output shares those subtrees with the input it read, which it neither changes nor writes twice,
so the output is the one a private copy gives, and an input with YAML aliases is still copied
(its output carries no anchors)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.migrate import cli
from dra_bridge.translate import dns_names
from dra_bridge.translate.catalog import Catalog, load_catalog
from dra_bridge.translate.plan import claim_plan
from dra_bridge.translate.plan.workloads import convert_object

DATA = Path(__file__).parents[1] / "data"
FIXTURES = sorted(
    p for d in ("examples", "custom-resources", "foreign", "pod-counts") for p in (DATA / d).glob("*.yaml")
)

ALIASED = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-a}
spec:
  containers:
  - name: a
    image: cuda
    env: &env
    - {name: A, value: "1"}
    resources: {limits: {nvidia.com/gpu: 1}}
  - name: b
    image: cuda
    env: *env
    resources: {limits: {nvidia.com/gpu: 2}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: team-a}
spec:
  selector: {matchLabels: &labels {app: d}}
  template:
    metadata: {labels: *labels}
    spec:
      containers:
      - {name: a, image: cuda, resources: {limits: {nvidia.com/gpu: 1}}}
"""


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _reached_twice(value: Any) -> list[int]:
    seen: set[int] = set()
    twice: list[int] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict | list):
            if id(v) in seen:
                twice.append(id(v))
                continue
            seen.add(id(v))
            stack.extend(v.values() if isinstance(v, dict) else v)
    return twice


@pytest.mark.parametrize("custom", [False, True], ids=["builtin", "custom-resources"])
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_shared_output_is_the_private_one_and_the_input_is_left_alone(
    fixture: Path, custom: bool, catalog: Catalog
) -> None:
    for obj in (d for d in yaml.safe_load_all(fixture.read_text()) if isinstance(d, dict)):
        before = copy.deepcopy(obj)
        private = convert_object(obj, catalog, include_custom_resources=custom)
        shared = convert_object(obj, catalog, include_custom_resources=custom, private=False)
        assert shared == private
        assert obj == before
        assert _reached_twice(shared.obj) == []
        assert shared.obj is not obj


def _convert(path: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["convert", "-f", str(path)], stdout=out, stderr=err) == 0, err.getvalue()
    return out.getvalue()


def test_an_input_with_aliases_is_copied_and_written_without_anchors(tmp_path: Path) -> None:
    aliased, expanded = tmp_path / "aliased.yaml", tmp_path / "expanded.yaml"
    aliased.write_text(ALIASED)
    docs = [json.loads(json.dumps(d)) for d in yaml.safe_load_all(ALIASED)]  # each alias a copy of its own
    expanded.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    assert "&" in aliased.read_text() and "&" not in expanded.read_text()
    text = _convert(aliased)
    assert "&id" not in text and "*id" not in text
    assert text == _convert(expanded)


def _clear_memos() -> None:
    claim_plan._laid.cache_clear()
    dns_names._digest_text.cache_clear()  # the recorded options' memo lives on each run's own Options


@pytest.mark.parametrize(
    "flags",
    [(), ("--alignment", "numa", "-o", "json"), ("--include-custom-resources",)],
    ids=["plain", "numa-json", "custom"],
)
def test_convert_with_warm_memos_writes_what_a_fresh_process_writes(flags: tuple[str, ...]) -> None:
    def run() -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        sources = [a for d in ("examples", "custom-resources", "foreign", "pod-counts") for a in ("-f", str(DATA / d))]
        code = cli.main(["convert", *sources, *flags], stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    _clear_memos()
    fresh = run()
    assert fresh[1] and fresh[2]
    assert run() == fresh
