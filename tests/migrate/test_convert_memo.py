"""``convert`` converts objects that differ only in their name once (issue 25: convert at most
1.5x a YAML load and dump): the output, the templates and the findings are the same as
converting each object afresh."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.migrate import cli
from dra_bridge.migrate.convert_memo import NameMemo, Result
from dra_bridge.migrate.manifests import read_sources
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.plan.workloads import Converted

DATA = Path(__file__).parents[1] / "data"
FIXTURES = sorted(p for d in ("examples", "custom-resources", "foreign") for p in (DATA / d).glob("*.yaml"))


def _run(path: Path, *flags: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["convert", "-f", str(path), *flags], stdout=out, stderr=err)
    assert code in (0, 3), err.getvalue()
    return out.getvalue(), err.getvalue()


def _renamed(doc: dict[str, Any], suffix: str) -> dict[str, Any]:
    return {**doc, "metadata": {**doc["metadata"], "name": f"{doc['metadata']['name']}-{suffix}"}}


class _Counting(NameMemo):
    hits_seen = 0

    def result(self, obj: Any, aliased: bool, work: Any) -> Result:
        before = self.hits
        found = super().result(obj, aliased, work)
        _Counting.hits_seen += self.hits - before
        return found


@pytest.mark.parametrize("flags", [(), ("--include-custom-resources",)], ids=["builtin", "custom-resources"])
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_renamed_copies_convert_as_they_would_afresh(
    fixture: Path, flags: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = [d for d in yaml.safe_load_all(fixture.read_text()) if isinstance(d, dict) and d.get("metadata")]
    docs = [d for d in docs if isinstance(d["metadata"].get("name"), str)]
    if not docs:
        pytest.skip("no named object")
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([*docs, *(_renamed(d, "b") for d in docs), *(_renamed(d, "c") for d in docs)]))
    _Counting.hits_seen = 0
    monkeypatch.setattr(cli, "NameMemo", _Counting)
    remembered = _run(path, *flags)
    assert _Counting.hits_seen == 2 * len(docs)
    monkeypatch.setattr(cli, "NameMemo", lambda: NameMemo(0))  # no memo: each object afresh
    assert remembered == _run(path, *flags)


def _gpu_pod(name: str, gpus: str) -> dict[str, Any]:
    container = {"name": "app", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


def _templates_of(pod: dict[str, Any]) -> list[str]:
    return [c["resourceClaimTemplateName"] for c in pod["spec"]["resourceClaims"]]


def test_pods_differing_in_a_device_field_get_their_own_templates(tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    pods = [_gpu_pod("a", "1"), _gpu_pod("b", "1"), _gpu_pod("c", "2"), _gpu_pod("a", "4")]
    path.write_text(yaml.safe_dump_all(pods))
    out = list(yaml.safe_load_all(_run(path)[0]))
    templates = {t["metadata"]["name"]: t for t in out if t["kind"] == "ResourceClaimTemplate"}
    converted = [o for o in out if o["kind"] == "Pod"]
    assert [p["metadata"]["name"] for p in converted] == ["a", "b", "c", "a"]
    counts = [
        templates[name]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for p in converted
        for name in _templates_of(p)
    ]
    assert counts == [1, 1, 2, 4]
    assert _templates_of(converted[0]) == _templates_of(converted[1])  # alike but the name: one template


def _result(name: str) -> Result:
    obj = {"kind": "ConfigMap", "metadata": {"name": name}}
    return Converted(obj, (), ()), (Finding(".", "", "ignored", "not a workload"),)


def test_the_memo_renames_the_stored_result_and_keeps_the_rest() -> None:
    memo, calls = NameMemo(), []

    def work(name: str) -> Result:
        calls.append(name)
        return _result(name)

    first = memo.result({"kind": "ConfigMap", "metadata": {"name": "x"}}, False, lambda: work("x"))
    second = memo.result({"kind": "ConfigMap", "metadata": {"name": "y"}}, False, lambda: work("y"))
    assert calls == ["x"]
    assert second[0].obj == {"kind": "ConfigMap", "metadata": {"name": "y"}}
    assert first[0].obj["metadata"]["name"] == "x"  # the stored output is not renamed in place
    assert second[1] == first[1]


class _Work:
    """A conversion that counts its calls."""

    def __init__(self, result: Result) -> None:
        self.result, self.calls = result, 0

    def __call__(self) -> Result:
        self.calls += 1
        return self.result


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "ConfigMap", "metadata": {"generateName": "x-"}},  # no name
        {"kind": "ConfigMap", "metadata": {"name": 7}},  # a name that is not text
        {"kind": "ConfigMap", "metadata": "x"},
    ],
    ids=["generate-name", "number", "no-mapping"],
)
def test_an_object_without_a_text_name_is_converted_every_time(obj: dict[str, Any]) -> None:
    memo, work = NameMemo(), _Work(_result("x"))
    for _ in range(2):
        memo.result(obj, False, work)
    assert work.calls == 2


def test_an_aliased_document_is_converted_every_time() -> None:
    memo, work = NameMemo(), _Work(_result("x"))
    for name in ("x", "y"):
        memo.result({"kind": "ConfigMap", "metadata": {"name": name}}, True, work)
    assert work.calls == 2


def test_an_output_that_does_not_carry_the_input_name_is_not_stored() -> None:
    memo, work = NameMemo(), _Work(_result("other"))
    for name in ("x", "y"):
        memo.result({"kind": "ConfigMap", "metadata": {"name": name}}, False, work)
    assert work.calls == 2


def test_the_memo_keeps_the_most_recently_used_results() -> None:
    memo, calls = NameMemo(2), []
    for kind in ("A", "B", "A", "C", "A", "B"):  # C pushes out B, the least recently used
        obj = {"kind": kind, "metadata": {"name": kind.lower()}}
        work = _Work((Converted(obj, (), ()), ()))
        memo.result(obj, False, work)
        calls += [kind] * work.calls
    assert calls == ["A", "B", "C", "B"]


def test_a_document_with_yaml_aliases_is_marked_aliased(tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(
        "kind: ConfigMap\nmetadata: {name: a, labels: &l {x: y}, annotations: *l}\n"
        "---\nkind: ConfigMap\nmetadata: {name: b, labels: {x: y}, annotations: {x: y}}\n"
    )
    assert [d.aliased for d in read_sources([str(path)])] == [True, False]
