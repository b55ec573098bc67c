"""Every spec we write passes the CDI specification's rules; the spec index reads only what the
runtime reads and counts an invalid spec as defining nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.bridge.errors import CdiError
from dra_bridge.bridge.kubeletplugin.cdi_specs import SpecIndex, write_spec
from dra_bridge.translate.cdi import render_spec
from dra_bridge.translate.cdi_rules import spec_problems

UID = "0a1b2c3d-0000-4000-8000-000000000001"
NODE = {"path": "/dev/dri/renderD128", "type": "c", "major": 226, "minor": 128}


def _spec(**over: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "cdiVersion": "0.5.0",
        "kind": "vendor.com/gpu",
        "devices": [{"name": "0", "containerEdits": {"deviceNodes": [NODE]}}],
    }
    spec.update(over)
    return spec


def test_a_valid_spec_has_no_problems() -> None:
    assert spec_problems(_spec()) == []


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"cdiVersion": "0.2.0"}, "cdiVersion"),
        ({"kind": "vendor.com"}, "kind"),
        ({"kind": "-vendor/gpu"}, "kind"),
        ({"devices": []}, "no devices"),
        ({"devices": [{"name": "a/b", "containerEdits": {"env": ["A=1"]}}]}, "not a CDI device name"),
        ({"devices": [{"name": "a", "containerEdits": {"env": ["A=1"]}}] * 2}, "defined twice"),
        ({"devices": [{"name": "a", "containerEdits": {}}]}, "containerEdits are empty"),
        ({"devices": [{"name": "a"}]}, "containerEdits are empty"),
        ({"devices": [{"name": "a", "containerEdits": {"env": ["=1"]}}]}, "KEY=value"),
        ({"devices": [{"name": "a", "containerEdits": {"deviceNodes": [{"path": ""}]}}]}, "without a path"),
        ({"devices": [{"name": "a", "containerEdits": {"deviceNodes": [{"path": "/d", "type": "x"}]}}]}, "type"),
        ({"devices": [{"name": "a", "containerEdits": {"deviceNodes": [{"path": "/d", "minor": -1}]}}]}, "minor"),
        (
            {"devices": [{"name": "a", "containerEdits": {"deviceNodes": [{"path": "/d", "permissions": "rx"}]}}]},
            "permissions",
        ),
        ({"devices": [{"name": "a", "containerEdits": {"mounts": [{"hostPath": "/x"}]}}]}, "mount"),
    ],
    ids=[
        "version",
        "kind-no-class",
        "kind-bad-vendor",
        "no-devices",
        "device-name",
        "twice",
        "empty-edits",
        "no-edits",
        "env",
        "node-path",
        "node-type",
        "node-minor",
        "node-permissions",
        "mount",
    ],
)
def test_each_cdi_rule(over: dict[str, Any], why: str) -> None:
    assert why in "; ".join(spec_problems(_spec(**over)))


def test_a_recipe_of_spec_level_nodes_only_never_yields_a_device_with_empty_edits() -> None:
    spec = render_spec(UID, [("gpu-0", {}), ("gpu-1", {})], [{"deviceNodes": [{"path": "/dev/kfd"}]}])
    assert [d["containerEdits"] for d in spec["devices"]] == [{"deviceNodes": [{"path": "/dev/kfd"}]}] * 2
    assert spec_problems(spec) == []


def test_the_writer_refuses_a_spec_that_breaks_the_rules(tmp_path: Path) -> None:
    with pytest.raises(CdiError, match="containerEdits are empty"):
        write_spec(tmp_path, UID, _spec(devices=[{"name": "a", "containerEdits": {}}]))
    assert list(tmp_path.iterdir()) == []


def test_the_index_reads_json_and_yaml_only_and_an_invalid_spec_resolves_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(_spec(kind="a.com/gpu")))
    (tmp_path / "b.yaml").write_text(json.dumps(_spec(kind="b.com/gpu")))  # JSON is YAML
    (tmp_path / "c.yml").write_text(json.dumps(_spec(kind="c.com/gpu")))  # the CDI library skips .yml
    (tmp_path / "d.json").write_text(json.dumps(_spec(kind="d.com/gpu", devices=[{"name": "0"}])))
    index = SpecIndex([tmp_path])
    assert index.resolves(["a.com/gpu=0", "b.com/gpu=0", "c.com/gpu=0", "d.com/gpu=0"]) == {
        "a.com/gpu=0": True,
        "b.com/gpu=0": True,
        "c.com/gpu=0": False,
        "d.com/gpu=0": False,
    }
