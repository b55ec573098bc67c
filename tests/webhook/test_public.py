"""The webhook package's public surface is exactly its ``__all__``."""

from __future__ import annotations

from dra_bridge import webhook


def test_all_lists_exactly_the_public_names() -> None:
    public = {n for n in vars(webhook) if not n.startswith("_") and not isinstance(getattr(webhook, n), type(webhook))}
    assert public == set(webhook.__all__)
