"""The kube package's public surface is exactly its ``__all__``."""

from __future__ import annotations

from dra_bridge import kube


def test_all_lists_exactly_the_public_names() -> None:
    public = {n for n in vars(kube) if not n.startswith("_") and not isinstance(getattr(kube, n), type(kube))}
    assert public == set(kube.__all__)
