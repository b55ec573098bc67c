"""A MIG profile spelled as an alias (migProfileAliases: ``3g.39gb`` for ``3g.40gb``) gets the
DeviceClass the catalog ships for that profile, not a class of the alias's name nobody installs."""

from __future__ import annotations

import pytest

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.pod_plan import plan_pod
from tests.factories import gpu, make_container, make_pod


def _shipped(catalog: Catalog) -> set[str]:
    return {c["metadata"]["name"] for c in catalog.device_classes()}


@pytest.mark.parametrize(
    ("resource", "canonical"),
    [
        ("nvidia.com/mig-3g.39gb", "3g.40gb"),
        ("nvidia.com/mig-1g.9gb.me", "1g.10gb.me"),
        ("nvidia.com/mig-7g.79gb", "7g.80gb"),
    ],
)
def test_an_alias_spelling_gets_the_shipped_class(catalog: Catalog, resource: str, canonical: str) -> None:
    mapping = catalog.lookup(resource)
    assert mapping is not None and mapping.device_class == f"nvidia-mig-{canonical}.dra-bridge.io"
    assert mapping.device_class in _shipped(catalog)
    plan = plan_pod(make_pod([make_container("c", gpu(1, resource))]), catalog)
    assert plan.changed
    spec = plan.templates[0]["spec"]["spec"]["devices"]["requests"][0]
    assert spec["exactly"]["deviceClassName"] == mapping.device_class
    assert not [f for f in plan.findings if "not in the catalog's profile list" in f.reason]


def test_a_profile_outside_the_table_keeps_its_own_name(catalog: Catalog) -> None:
    mapping = catalog.lookup("nvidia.com/mig-3g.20gb")
    assert mapping is not None and mapping.device_class == "nvidia-mig-3g.20gb.dra-bridge.io"
    odd = catalog.lookup("nvidia.com/mig-2g.11gb")
    assert odd is not None and odd.device_class == "nvidia-mig-2g.11gb.dra-bridge.io"
    assert odd.device_class not in _shipped(catalog)
