"""A drain refuses nothing (docs/design.md D37): the webhook's pods sleep in preStop (the kubelet's
native sleep action) while their endpoint goes, then drain for --drain-period after SIGTERM, and
the grace period covers both."""

from __future__ import annotations

import pytest

from dra_bridge.webhook.settings import Settings
from tests.chart.render import HelmFailed, Obj, by_kind, render


def _spec(*extra: str) -> Obj:
    (deployment,) = by_kind(render("defaults", *extra), "Deployment")
    return deployment["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def test_the_webhook_sleeps_in_pre_stop_then_drains_within_its_grace_period() -> None:
    spec = _spec()
    container = spec["containers"][0]
    assert container["lifecycle"] == {"preStop": {"sleep": {"seconds": 10}}}
    settings = Settings.from_args(container["args"], {"DRA_WEBHOOK_NAMESPACE": "gpu-system"})
    assert settings.drain_period == 5
    assert spec["terminationGracePeriodSeconds"] == 25


def test_the_drain_follows_its_values() -> None:
    spec = _spec("--set", "webhook.drain.preStopSeconds=0", "--set", "webhook.drain.periodSeconds=8")
    container = spec["containers"][0]
    assert "lifecycle" not in container and "--drain-period=8" in container["args"]
    assert spec["terminationGracePeriodSeconds"] == 18


def test_a_grace_period_shorter_than_the_drain_is_refused() -> None:
    with pytest.raises(HelmFailed, match="terminationGracePeriodSeconds"):
        render("defaults", "--set", "webhook.terminationGracePeriodSeconds=10")
