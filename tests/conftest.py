"""Rules for every test: per-test timeouts by kind, and readable parametrize ids.

Timeouts (pytest-timeout). pyproject sets ``timeout = 10``: a test that hangs fails after 10 s,
its fixtures' set-up and teardown included (pytest-timeout's default; ``timeout_func_only`` stays
false so a hung fixture fails too). The slow kinds carry a mark, registered in pyproject, and
the mark brings its own limit (:data:`SLOW_TIMEOUTS`) unless the test sets ``timeout`` itself:

- ``e2e``: a real control plane. The first e2e test of a session also pays for starting it (the
  session fixture ``control_plane``; ``ControlPlane.start`` gives up after 90 s) and a module's
  first test for its module fixtures (the webhook processes), so the limit covers that set-up;
- ``load``: the webhook load test, ``DRA_WEBHOOK_LOAD_SECONDS`` (60) plus 90 s, set in its module;
- ``steady_state``: the bridge's e2e scenario that holds ``DRA_BRIDGE_STEADY_SECONDS`` (300)
  without API writes, plus 240 s, set on the test;
- ``handover``: the whole hand-over on the real node; sets its own limit (it waits out the kubelet's
  5-minute capacity hold) and is ordered last, so every other real-node test starts from a node
  on which no device plugin ever registered;
- ``server_version``: not slow, a selection: the e2e tests whose behaviour depends on the API
  server's version, the only ones CI's second pass runs against 1.34 (checked here: e2e, never
  real_node);
- ``property``: hypothesis property tests (hundreds of examples, 1-5 s each on 2 busy cores): 60 s.

Ids. Every parametrized test must have readable ids: pytest's fallback for a dict, list or
object is the argument name and an index (``spec0``), and a multi-line string gives an id full
of ``\\n``. Such ids stop the collection with a message naming the test; pass ``ids=`` or
``pytest.param(..., id=...)``.

Fixtures. ``catalog``: the shipped catalog, loaded once per session (a frozen value, so tests
cannot change it for each other).

Install. The packages are imported through the ``dra_bridge`` namespace from the link tree of
an ``editable_mode=strict`` install (README "Import names"), which does not see modules added
after it was built: the session stops at once, naming them, instead of failing on imports.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dra_bridge.translate.catalog import Catalog, load_catalog

#: Seconds per mark when the test sets no ``timeout`` of its own. Measured on 2 shared cores
#: (README "Tests"): an e2e test takes at most 3 s with its set-up, the control plane's start
#: 8 s, so 120 s is the start's own 90 s deadline plus 30 s (the longest wait of a test);
#: load and steady_state set their limits on the tests, these are fallbacks.
SLOW_TIMEOUTS = {"real_node": 180.0, "e2e": 120.0, "load": 150.0, "steady_state": 540.0, "property": 60.0}


def _unreadable_id(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    if "\\n" in callspec.id:
        return "an escaped newline"
    for name in callspec.params:
        if re.search(rf"(?:^|-){re.escape(name)}\d+(?:-|$)", callspec.id):
            return f"pytest's fallback {name}<index>"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unreadable = []
    for item in items:
        why = _unreadable_id(item)
        if why:
            unreadable.append(f"{item.nodeid} ({why})")
        if item.get_closest_marker("server_version") is not None and (
            item.get_closest_marker("e2e") is None or item.get_closest_marker("real_node") is not None
        ):
            unreadable.append(f"{item.nodeid} (server_version is for e2e tests that are not real_node)")
        if item.get_closest_marker("timeout") is None:
            for mark, seconds in SLOW_TIMEOUTS.items():
                if item.get_closest_marker(mark) is not None:
                    item.add_marker(pytest.mark.timeout(seconds))
                    break
    # The hand-over registers a device plugin, after which the kubelet keeps the capacity for 5
    # minutes: once per run, last (a stable sort keeps the rest in order).
    items.sort(key=lambda item: item.get_closest_marker("handover") is not None)
    if unreadable:
        raise pytest.UsageError(
            "parametrized tests need readable ids (ids= or pytest.param(id=)), and server_version marks "
            "e2e tests that are not real_node:\n  " + "\n  ".join(unreadable)
        )


def _modules_missing_from_the_install() -> list[str]:
    """Source modules of the checkout that the installed ``dra_bridge`` namespace lacks."""
    import dra_bridge

    root = Path(__file__).resolve().parents[1]
    missing = []
    for folder in ("translate", "kube", "migrate", "webhook", "bridge"):
        for source in (root / folder).rglob("*.py"):
            relative = source.relative_to(root)
            if not any((Path(base) / relative).exists() for base in dra_bridge.__path__):
                missing.append(str(relative))
    return sorted(missing)


def pytest_sessionstart(session: pytest.Session) -> None:
    missing = _modules_missing_from_the_install()
    if missing:
        raise pytest.UsageError(
            "modules added since the editable install was built: "
            f"{', '.join(missing[:5])}; run the README's pip install again"
        )


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The shipped catalog (no user catalog)."""
    return load_catalog()
