"""Each translate package's public surface is exactly its ``__all__`` (docs/design.md D22)."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = (
    "dra_bridge.translate",
    "dra_bridge.translate.cel",
    "dra_bridge.translate.inventory",
    "dra_bridge.translate.plan",
)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_says_what_it_owns(name: str) -> None:
    doc = importlib.import_module(name).__doc__
    assert doc and len(doc.strip()) > 80
