"""The pure CDI rules of the DRA plugin (translate/cdi.py): names, subrequests, composition."""

from __future__ import annotations

import pytest

from dra_bridge.translate.cdi import (
    composition_refusals,
    device_cdi_id,
    render_spec,
    request_name,
    spec_file_name,
    spec_file_uid,
    toolkit_cdi_id,
)
from dra_bridge.translate.errors import ClaimError

UID = "0a1b2c3d-0000-4000-8000-000000000001"


def test_names_contain_the_claim_uid_and_never_the_toolkits_kind() -> None:
    assert device_cdi_id(UID, "gpu-amd0") == f"dra-bridge.io/claim={UID}-gpu-amd0"
    assert spec_file_uid(spec_file_name(UID)) == UID
    assert spec_file_uid("nvidia.yaml") is None and spec_file_uid("dra-bridge.io-claim_x.json") is None
    assert toolkit_cdi_id("nvidia.com/gpu.shared", "GPU-a::3") == "nvidia.com/gpu=GPU-a"
    assert toolkit_cdi_id("amd.com/gpu", "0000:03:00.0") is None


def test_subrequest_suffix_is_stripped() -> None:
    assert (request_name("gpu/small"), request_name("gpu")) == ("gpu", "gpu")


@pytest.mark.parametrize(
    ("env", "refused"),
    [
        ("NVIDIA_VISIBLE_DEVICES=GPU-a", True),
        ("CUDA_VISIBLE_DEVICES=0", True),
        ("FOO_VISIBLE_DEVICES=1", True),
        ("GPU_DEVICE_ORDINAL=0", True),
        ("MY_LIST=a,b", True),
        ("DRA_BRIDGE_NODE=n", False),
    ],
)
def test_no_per_device_edit_sets_a_list_valued_variable(env: str, refused: bool) -> None:
    assert bool(composition_refusals({"env": [env]})) == refused
    if refused:
        with pytest.raises(ClaimError, match="list-valued"):
            render_spec(UID, [("d", {"env": [env]})])


def test_spec_level_device_nodes_are_merged_once() -> None:
    spec = render_spec(UID, [("a", {}), ("b", {})], [{"deviceNodes": [{"path": "/dev/kfd"}]}] * 2)
    assert spec["containerEdits"] == {"deviceNodes": [{"path": "/dev/kfd"}]}
    assert spec["cdiVersion"] == "0.5.0" and spec["kind"] == "dra-bridge.io/claim"
