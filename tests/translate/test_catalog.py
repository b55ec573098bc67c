"""The catalog: exact names, MIG patterns and aliases, user extension, errors naming the key."""

from __future__ import annotations

import pytest

from dra_bridge.translate.catalog import Catalog, load_catalog
from dra_bridge.translate.errors import CatalogError

HEADER = "apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\n"


@pytest.mark.parametrize(
    ("name", "kind", "device_class"),
    [
        ("nvidia.com/gpu", "gpu", "nvidia-gpu.dra-bridge.io"),
        ("nvidia.com/mig-1g.10gb", "mig", "nvidia-mig-1g.10gb.dra-bridge.io"),
        ("nvidia.com/mig-1g.10gb.me", "mig", "nvidia-mig-1g.10gb.me.dra-bridge.io"),
        ("nvidia.com/gpu.shared", "shared", "nvidia-gpu-shared.dra-bridge.io"),
        ("nvidia.com/mig-1g.5gb.shared", "shared", "nvidia-mig-1g.5gb-shared.dra-bridge.io"),
        ("amd.com/gpu", "gpu", "amd-gpu.dra-bridge.io"),
        ("gpu.intel.com/i915", "gpu", "intel-i915.dra-bridge.io"),
        ("gpu.intel.com/xe", "gpu", "intel-xe.dra-bridge.io"),
        ("nvidia.com/gpumem", "slicing", ""),
    ],
)
def test_shipped_resources_map_to_our_classes(catalog: Catalog, name: str, kind: str, device_class: str) -> None:
    m = catalog.lookup(name)
    assert m is not None and m.kind == kind and m.device_class == device_class


@pytest.mark.parametrize(
    "name",
    [
        "nvidia.com/gpu-10gb",
        "nvidia.com/gpux",
        "nvidia.com/mig-1g",
        "nvidia.com/mig-",
        "example.com/gpu",
        "nvidia.com/mig-1g.10gb.shared.extra",
    ],
)
def test_names_match_exactly_never_by_prefix(catalog: Catalog, name: str) -> None:
    assert catalog.lookup(name) is None


def test_mig_profile_aliases_and_me_spelling_reach_the_vendor_form(catalog: Catalog) -> None:
    assert catalog.aliases("3g.40gb") == ("3g.39gb", "3g.40gb")
    assert catalog.aliases("1g.10gb.me") == ("1g.10gb+me", "1g.9gb+me")
    assert catalog.aliases("1g.5gb") == ("1g.5gb",)  # A100-40GB; 1g.6gb is an A30 profile, not an alias
    vendor = catalog.with_target("vendor").lookup("nvidia.com/mig-3g.39gb")
    assert vendor is not None and vendor.device_class == "mig.nvidia.com"
    assert '"3g.39gb", "3g.40gb"' in vendor.selectors[0]
    assert "memory" not in vendor.selectors[0]


def test_user_catalog_adds_resources_and_aliases() -> None:
    catalog = load_catalog(
        HEADER
        + """
migProfileAliases: [[3g.40gb, 3g.41gb]]
resources:
  - name: example.com/accel
    kind: gpu
    deviceClass: example-accel.dra-bridge.io
"""
    )
    assert catalog.lookup("example.com/accel") is not None
    assert catalog.aliases("3g.41gb") == ("3g.39gb", "3g.40gb", "3g.41gb")


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("resources:\n  - name: nvidia.com/gpu\n    kind: gpu\n    deviceClass: x.dra-bridge.io\n", "already covered"),
        (
            "resources:\n  - name: nvidia.com/mig-1g.5gb\n    kind: gpu\n    deviceClass: sneaky.example.com\n",
            "already covered by nvidia.com/mig-{profile}",
        ),
        (
            "resources:\n  - pattern: 'nvidia.com/mig-{profile}.me'\n    kind: gpu\n    deviceClass: a.b\n",
            "already covered",
        ),
        ("bridgeDriver: mine.example.com\n", "bridgeDriver"),
        (
            "resources:\n  - name: example.com/a\n    kind: gpu\n    deviceClass: a.b\n    1: x\n    zz: y\n",
            "resources[0].1",
        ),
        (
            "resources:\n  - name: example.com/a\n    kind: gpu\n    deviceClass: Not_Valid\n",
            "resources[0].deviceClass",
        ),
        ("resources:\n  - name: example.com/a\n    kind: magic\n    deviceClass: a.b\n", "resources[0].kind"),
        (
            "resources:\n  - name: example.com/a\n    kind: gpu\n    deviceClass: a.b\n    colour: red\n",
            "resources[0].colour",
        ),
        (
            "resources:\n  - name: example.com/a\n    pattern: 'x/{profile}'\n    kind: gpu\n    deviceClass: a.b\n",
            "exactly one of name and pattern",
        ),
        ("resources:\n  - name: example.com/a\n    kind: slicing\n", "resources[0].reason"),
        ("target: everywhere\n", "target"),
        ("migProfiles: [big]\n", "migProfiles"),
        ("resources: [\n", "mine.yaml:4:1: not valid YAML"),
    ],
    ids=[
        "redefines-shipped-name",
        "name-inside-shipped-pattern",
        "redefines-shipped-pattern",
        "bridge-driver",
        "non-string-key",
        "class-not-dns",
        "unknown-kind",
        "unknown-key",
        "name-and-pattern",
        "slicing-without-reason",
        "unknown-target",
        "bad-mig-profile",
        "yaml-syntax",
    ],
)
def test_bad_user_catalog_is_refused_naming_the_key(body: str, key: str) -> None:
    with pytest.raises(CatalogError, match=key.replace("[", r"\[").replace("]", r"\]")) as info:
        load_catalog(HEADER + body, "mine.yaml")
    assert "mine.yaml" in str(info.value)


def test_catalog_without_header_is_refused() -> None:
    with pytest.raises(CatalogError, match="apiVersion"):
        load_catalog("resources: []\n", "mine.yaml")


def test_device_classes_cover_every_exact_resource_and_known_profile(catalog: Catalog) -> None:
    names = {c["metadata"]["name"] for c in catalog.device_classes()}
    assert {
        "nvidia-gpu.dra-bridge.io",
        "amd-gpu.dra-bridge.io",
        "intel-xe.dra-bridge.io",
        "nvidia-mig-1g.5gb.dra-bridge.io",
        "nvidia-mig-3g.40gb.dra-bridge.io",
    } <= names


def test_digest_prefix_equals_the_prefix_of_the_whole_digest_in_base32() -> None:
    import base64
    import hashlib

    from dra_bridge.translate.dns_names import canonical_json, digest

    for value in ({"a": 1}, ["x", "y"], "é", {"spec": {"requests": [{"count": 2}]}}):
        whole = base64.b32encode(hashlib.sha256(canonical_json(value).encode()).digest()).decode().lower()
        assert [digest(value, n) for n in range(1, 53)] == [whole[:n] for n in range(1, 53)]


def test_lookups_are_remembered_per_catalog_and_target() -> None:
    from dra_bridge.translate.catalog import LOOKUP_MEMO_SIZE

    catalog = load_catalog()
    bridge = catalog.lookup("nvidia.com/mig-1g.10gb")
    assert bridge is not None and catalog.lookup("nvidia.com/mig-1g.10gb") is bridge
    vendor = catalog.with_target("vendor").lookup("nvidia.com/mig-1g.10gb")
    assert vendor is not None and vendor.device_class == "mig.nvidia.com", "a new target must not reuse answers"
    assert catalog.lookup("nvidia.com/mig-1g.10gb") is bridge
    for i in range(LOOKUP_MEMO_SIZE + 10):  # names come from pods: the memo stays bounded
        assert catalog.lookup(f"example.com/thing-{i}") is None
    assert len(catalog._memo) == LOOKUP_MEMO_SIZE


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("migProfileAliases: 5\n", "migProfileAliases: must be a list"),
        ("migProfileAliases: {a: b}\n", "migProfileAliases: must be a list"),
        ("migProfileAliases: [5]\n", r"migProfileAliases\[0\]"),
        ("migProfiles: 5\n", "migProfiles"),
        ("target: [bridge]\n", "target: must be bridge or vendor"),
        ("resources:\n  - name: example.com/a\n    kind: slicing\n    reason: [x]\n", r"resources\[0\]\.reason"),
        (
            "resources:\n  - name: example.com/a\n    kind: gpu\n    deviceClass: a.b\n    gfd: [x]\n",
            r"resources\[0\]\.gfd",
        ),
        ("resources:\n  - name: example.com/a\n    kind: [gpu]\n    deviceClass: a.b\n", r"resources\[0\]\.kind"),
        ("resources:\n  - name: example.com/a\n    kind: gpu\n    deviceClass: a.b\n    edits: 5\n", r"\.edits"),
        ("resources:\n  - name: example.com/a\n    kind: gpu\n    deviceClass: a.b\n    vendor: [x]\n", r"\.vendor"),
        ("resources: 5\n", "resources: must be a list"),
    ],
    ids=[
        "aliases-a-number",
        "aliases-a-mapping",
        "alias-group-a-number",
        "profiles-a-number",
        "target-a-list",
        "reason-a-list",
        "gfd-a-list",
        "kind-a-list",
        "edits-a-number",
        "vendor-a-list",
        "resources-a-number",
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_key_and_file(body: str, key: str) -> None:
    with pytest.raises(CatalogError, match=key) as info:
        load_catalog(HEADER + body, "mine.yaml")
    assert str(info.value).startswith("mine.yaml"), info.value


def test_a_catalog_nesting_deeper_than_the_limit_is_refused_naming_the_key() -> None:
    deep = "resources:\n  - name: example.com/a\n    kind: gpu\n    deviceClass: a.b\n    edits: " + "[" * 40 + "]" * 40
    with pytest.raises(CatalogError, match=r"mine.yaml: resources\[0\]\.edits(\[0\])+: nests deeper than"):
        load_catalog(HEADER + deep + "\n", "mine.yaml")


def test_a_duplicate_key_is_refused_as_the_manifest_reader_does() -> None:
    body = "resources:\n  - name: example.com/a\n    kind: gpu\n    kind: slicing\n    deviceClass: a.b\n"
    with pytest.raises(CatalogError, match=r"mine.yaml:\d+:\d+: not valid YAML: found duplicate key 'kind'"):
        load_catalog(HEADER + body, "mine.yaml")
