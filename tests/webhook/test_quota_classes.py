"""The webhook and the quota on the wrong class (docs/design.md D27): once the catalog's target is
the vendor, a namespace whose ResourceQuota counts only our bridge class keeps its pods legacy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dra_bridge.webhook.runtime import Runtime, watch_catalog
from tests.factories import make_pod
from tests.webhook.conftest import make_admission_review
from tests.webhook.test_admission import Client, ClientFactory, patch_of, post

BRIDGE_KEY = "nvidia-gpu.dra-bridge.io.deviceclass.resource.k8s.io/devices"
VENDOR_KEY = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


def _vendor(runtime: Runtime, tmp_path: Path, keys: set[str]) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text("apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\ntarget: vendor\n")
    runtime.catalog = watch_catalog(path)
    runtime.quota_keys = lambda ns: frozenset(keys) if ns == "team-a" else frozenset()
    runtime._context = None


async def test_a_quota_counting_only_the_bridge_class_keeps_the_pod_legacy_under_the_vendor_target(
    aiohttp_client: ClientFactory, app: Any, runtime: Runtime, tmp_path: Path
) -> None:
    client: Client = await aiohttp_client(app)
    _vendor(runtime, tmp_path, {BRIDGE_KEY})
    _, answer = await post(client, make_admission_review(make_pod()))
    response = answer["response"]
    assert "patch" not in response, response
    assert any(VENDOR_KEY in w and BRIDGE_KEY in w for w in response["warnings"]), response["warnings"]
    _vendor(runtime, tmp_path, {BRIDGE_KEY, VENDOR_KEY})
    _, answer = await post(client, make_admission_review(make_pod()))
    assert patch_of(answer), answer
