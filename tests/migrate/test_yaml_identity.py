"""``dra-migrate`` reads and writes YAML through translate/fast_yaml.py: its convert, report and
simulate print, byte for byte, what they print with stock PyYAML's constructor, resolver and
dumper (the same input, the same process), on the examples and on inputs chosen to reach the
stock paths: aliases, merge keys, duplicate keys, tags, timestamps, an alias bomb, a bad int."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from yaml.constructor import BaseConstructor
from yaml.resolver import BaseResolver

from dra_bridge.migrate import manifests
from dra_bridge.migrate.cli import main
from dra_bridge.translate.strict_yaml import StrictLoader

DATA = Path(__file__).parents[1] / "data"
POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: ns
spec:
  containers:
  - name: c
    image: img
    resources:
      limits: {{nvidia.com/gpu: 1}}
"""
INPUTS = {
    "aliases": """apiVersion: v1
kind: Pod
metadata:
  name: a
  labels: &l {app: x, when: 2001-12-14t21:59:43.10-05:00, n: '007'}
  annotations: *l
spec:
  containers:
  - name: c
    image: img
    args: &args ["--a", "yes", "no", "~", "null", 1e3, 0x1f, "  lead", "multi\\nline"]
    command: *args
    resources:
      limits: &lim {nvidia.com/gpu: 1}
      requests: *lim
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, creationTimestamp: 2020-01-01}
data:
  bin: !!binary |
    R0lGODlhDAAMAIQAAP//9/X
  ts: !!timestamp 2001-12-14
  s: !!str 12
  u: "h\\u00e9llo \\U0001F600"
  empty: ""
  lists: [[], [[1]], {}]
  5: five
  true: yes
  null: nil
  shared: &s {k: v}
  again: *s
""",
    "merge-key": POD.format(name="m") + "  tolerations:\n  - <<: {key: k}\n    effect: NoSchedule\n",
    "duplicate-key": POD.format(name="ok") + "---\n" + POD.format(name="dup").replace("  namespace: ns\n", "  namespace: ns\n  namespace: x\n"),
    "duplicate-int-key": "a: {1: x, 0x1: y}\n",
    "bomb": "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdef", "bcdefg", strict=True)),
    "recursive": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\ndata: &d {self: *d}\n",
    "bad-yaml": POD.format(name="x") + "---\nfoo: [unclosed\n",
    "long-int": "a: " + "9" * 5000 + "\n",
    "list": "apiVersion: v1\nkind: List\nitems:\n" + "".join("- " + POD.format(name=f"l{i}").replace("\n", "\n  ").rstrip() + "\n" for i in range(2)),
}  # fmt: skip


def _outputs(command: list[str], paths: list[Path]) -> list[tuple[int, str, str]]:
    results = []
    for path in paths:
        out, err = io.StringIO(), io.StringIO()
        code = main([*command, "-f", str(path)], stdout=out, stderr=err)
        results.append((code, out.getvalue(), err.getvalue()))
    return results


def _inputs(command: list[str], tmp_path: Path) -> tuple[list[str], list[Path]]:
    """The command's arguments and its inputs: the examples and INPUTS; for simulate, what
    convert makes of them, with the report's nodes and our DeviceClasses."""
    paths = sorted((DATA / "examples").glob("*.yaml")) + sorted((DATA / "custom-resources").glob("*.yaml"))
    for name, text in INPUTS.items():
        (tmp_path / f"{name}.yaml").write_text(text)
        paths.append(tmp_path / f"{name}.yaml")
    if command[0] != "simulate":
        return command, paths
    classes = io.StringIO()
    assert main(["classes"], stdout=classes) == 0
    (tmp_path / "classes.yaml").write_text(classes.getvalue())
    converted = []
    for path in paths:
        out = io.StringIO()
        if main(["convert", "-f", str(path)], stdout=out, stderr=io.StringIO()) == 0:
            converted.append(tmp_path / f"{path.stem}.converted.yaml")
            converted[-1].write_text(out.getvalue())
    cluster = ["-f", str(DATA / "report" / "cluster.yaml"), "-f", str(tmp_path / "classes.yaml")]
    return [*command, *cluster], converted


@pytest.mark.parametrize(
    "command",
    [
        ["convert"],
        ["convert", "-o", "json"],
        ["report", "--kubernetes-version", "1.36"],
        ["report", "--kubernetes-version", "1.36", "-o", "json"],
        ["simulate"],
        ["simulate", "-o", "json"],
    ],
    ids=["convert", "convert-json", "report", "report-json", "simulate", "simulate-json"],
)
def test_the_commands_print_what_they_print_with_stock_pyyaml(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, paths = _inputs(command, tmp_path)
    fast = _outputs(args, paths)
    with monkeypatch.context() as stock:
        stock.setattr(StrictLoader, "construct_document", BaseConstructor.construct_document)
        stock.setattr(StrictLoader, "resolve", BaseResolver.resolve)
        stock.setattr(manifests, "_Dumper", yaml.CSafeDumper)
        expected = _outputs(args, paths)
    assert fast == expected
    codes = {code for code, _, _ in fast}
    assert 0 in codes and (command[0] == "simulate" or 1 in codes)  # both the outputs and the errors compared
    assert len(paths) > 10 and all(out for code, out, _ in fast if code == 0)
