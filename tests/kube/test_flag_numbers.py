"""Numbers of seconds in flags and their environment twins (kube.flags.seconds): finite, positive
(or zero where zero means something), else one error naming the setting."""

from __future__ import annotations

import math

import pytest

from dra_bridge.bridge.cli import main as bridge_main
from dra_bridge.bridge.interlocks import check_settle
from dra_bridge.bridge.observation import Memory, Observation
from dra_bridge.kube.flags import FlagValueError, seconds
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.settings import Settings as WebhookSettings

NOT_FINITE = ["nan", "NaN", "inf", "-inf", "Infinity", "1e999"]


@pytest.mark.parametrize("raw", [*NOT_FINITE, "-1", "0", "x", ""])
def test_seconds_refuses_what_is_not_a_finite_positive_number(raw: str) -> None:
    with pytest.raises(FlagValueError, match="--x/X_TWIN") as err:
        seconds(raw, "--x/X_TWIN")
    assert "\n" not in str(err.value)


def test_seconds_takes_zero_only_where_allowed() -> None:
    assert seconds("2.5", "--x") == 2.5 and seconds(3, "--x") == 3.0
    assert seconds("0", "--x", zero=True) == 0.0
    with pytest.raises(FlagValueError):
        seconds("nan", "--x", zero=True)


BRIDGE = [
    "--poll-interval",
    "--settle-period",
    "--claim-grace-period",
    "--unhealthy-taint-after",
    "--healthy-untaint-after",
]


@pytest.mark.parametrize("raw", ["nan", "inf"])
@pytest.mark.parametrize("flag", BRIDGE)
def test_bridge_run_refuses_a_non_finite_number_in_one_line(
    flag: str, raw: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bridge_main(["run", "--node-name", "n", flag, raw]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag in err, err


@pytest.mark.parametrize("raw", ["nan", "inf"])
@pytest.mark.parametrize("flag", BRIDGE)
def test_bridge_env_twins_refuse_a_non_finite_number(flag: str, raw: str, capsys: pytest.CaptureFixture[str]) -> None:
    twin = "DRA_BRIDGE_" + flag[2:].replace("-", "_").upper()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(twin, raw)
        assert bridge_main(["run", "--node-name", "n"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and twin in err, err


WEBHOOK = [
    "--reload-interval",
    "--reconcile-interval",
    "--template-deadline",
    "--template-grace",
    "--drain-period",
    "--handshake-timeout",
    "--header-timeout",
    "--body-timeout",
    "--idle-timeout",
]


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("flag", WEBHOOK)
def test_webhook_serve_refuses_a_non_finite_number(flag: str, raw: str) -> None:
    with pytest.raises(WebhookConfigError, match=flag) as err:
        WebhookSettings.from_args(["--tls-cert-file", "c", "--tls-key-file", "k", f"{flag}={raw}"], {})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("settle", [math.nan, math.inf])
def test_the_settle_interlock_fails_closed_for_a_non_finite_period(settle: float) -> None:
    obs = Observation(now=1000, settle_seconds=settle)
    assert check_settle(obs, Memory(clear_since=0)) is not None
