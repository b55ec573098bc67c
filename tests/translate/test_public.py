"""Each translate package's public surface is exactly its ``__all__`` (docs/design.md D22)."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

PACKAGES = (
    "dra_bridge.translate",
    "dra_bridge.translate.cel",
    "dra_bridge.translate.inventory",
    "dra_bridge.translate.plan",
)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names_and_each_exists(name: str) -> None:
    package = importlib.import_module(name)
    public = {n for n, v in vars(package).items() if not n.startswith("_") and not isinstance(v, ModuleType)}
    assert public == set(package.__all__)
    assert all(hasattr(package, n) for n in package.__all__)
    assert len(package.__all__) == len(set(package.__all__))


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_says_what_it_owns(name: str) -> None:
    doc = importlib.import_module(name).__doc__
    assert doc and len(doc.strip()) > 80
