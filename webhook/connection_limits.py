"""The connection limits of ``dra-webhook serve``: timeouts and caps, their flags (docs/webhook.md).

    ConnectionLimits(handshake_timeout, header_timeout, body_timeout, idle_timeout,
                     max_requests, max_connections)
    limits_from(given) -> ConnectionLimits            from flag values; WebhookConfigError naming the flag
    CONNECTION_FLAGS                                   the flag table rows (webhook.serve_flags)
    handler_args(limits) -> dict                       aiohttp RequestHandler keyword arguments

    flag                          env twin                                  default
    --handshake-timeout           DRA_WEBHOOK_HANDSHAKE_TIMEOUT             10 (seconds for the TLS handshake)
    --header-timeout              DRA_WEBHOOK_HEADER_TIMEOUT                10 (seconds for a request line and headers)
    --body-timeout                DRA_WEBHOOK_BODY_TIMEOUT                  10 (seconds for a request body)
    --idle-timeout                DRA_WEBHOOK_IDLE_TIMEOUT                  60 (seconds kept alive with no request)
    --max-requests-per-connection DRA_WEBHOOK_MAX_REQUESTS_PER_CONNECTION   1000
    --max-connections             DRA_WEBHOOK_MAX_CONNECTIONS               256 (per port; docs/design.md D31)

The sizes of a request head are constants (:data:`MAX_HEADERS` fields of at most
:data:`MAX_FIELD_BYTES`, a request line of at most :data:`MAX_LINE_BYTES`), so one connection
that never finishes its head holds at most about 256 kB of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra_bridge.kube.flags import WEBHOOK_PREFIX, Flag, FlagValueError, seconds
from dra_bridge.webhook.errors import WebhookConfigError

#: Header fields in one request (aiohttp's default is 128; the API server sends about ten).
MAX_HEADERS = 32
#: Bytes in one header field and in the request line (aiohttp's defaults).
MAX_FIELD_BYTES = 8190
MAX_LINE_BYTES = 8190


@dataclass(frozen=True)
class ConnectionLimits:
    """Timeouts (seconds) and caps of one listening port; see the module docstring."""

    handshake_timeout: float = 10.0
    """From accept to the end of the TLS handshake."""
    header_timeout: float = 10.0
    """From the end of the handshake (or a kept-alive request's first byte) to the end of its head."""
    body_timeout: float = 10.0
    """From the end of a request's head to the end of its body."""
    idle_timeout: float = 60.0
    """A kept-alive connection with no request in progress is closed after this long."""
    max_requests: int = 1000
    """Requests on one connection; the last one is answered with ``Connection: close``."""
    max_connections: int = 256
    """Connections open at once on one port; at the cap a new one closes another (docs/design.md D31)."""


def _number(raw: str, kind: type[int] | type[float], flag: str) -> float:
    try:
        return kind(raw)
    except ValueError:
        what = "a positive integer" if kind is int else "a number of seconds"
        raise WebhookConfigError(f"{flag} {raw!r}: not {what}") from None


#: Flag name -> the ConnectionLimits field it sets (the flag says what it caps).
FLAG_FIELDS = {
    "handshake_timeout": "handshake_timeout",
    "header_timeout": "header_timeout",
    "body_timeout": "body_timeout",
    "idle_timeout": "idle_timeout",
    "max_requests_per_connection": "max_requests",
    "max_connections": "max_connections",
}

CONNECTION_FLAGS = (
    Flag("handshake_timeout", "seconds from accepting a connection to the end of its TLS handshake", "10", "SECONDS"),
    Flag(
        "header_timeout",
        "seconds for a request line and headers, from the handshake's end or a kept-alive request's first byte",
        "10",
        "SECONDS",
    ),
    Flag("body_timeout", "seconds for a request body, from the end of its headers (then 408)", "10", "SECONDS"),
    Flag("idle_timeout", "seconds a kept-alive connection may wait for its next request", "60", "SECONDS"),
    Flag("max_requests_per_connection", "requests on one connection before it is closed", "1000", "N"),
    Flag(
        "max_connections",
        "connections open at once on each port; at the cap a new one closes the oldest that has not "
        "sent a request head",
        "256",
        "N",
    ),
)
"""The rows webhook.serve_flags adds to its flag table."""


def limits_from(given: Mapping[str, Any]) -> ConnectionLimits:
    """The limits from flag values (``given``: flag name -> value as given; absent: the default);
    WebhookConfigError naming the flag and its twin when one is not a positive finite number."""
    values: dict[str, Any] = {}
    for name, attr in FLAG_FIELDS.items():
        raw = given.get(name)
        if raw is None:
            continue
        flag = f"--{name.replace('_', '-')}/{WEBHOOK_PREFIX}{name.upper()}"
        if attr.startswith("max_"):
            value: float = _number(str(raw), int, flag)
            if value <= 0:
                raise WebhookConfigError(f"{flag} {raw!r}: must be a positive integer")
        else:
            try:
                value = seconds(raw, flag)
            except FlagValueError as exc:
                raise WebhookConfigError(str(exc)) from None
        values[attr] = value
    return ConnectionLimits(**values)


def handler_args(limits: ConnectionLimits) -> dict[str, Any]:
    """Keyword arguments for aiohttp's RequestHandler (through ``web.AppRunner``)."""
    return {
        "keepalive_timeout": limits.idle_timeout,
        "max_headers": MAX_HEADERS,
        "max_field_size": MAX_FIELD_BYTES,
        "max_line_size": MAX_LINE_BYTES,
        "lingering_time": min(10.0, limits.body_timeout),
        "auto_decompress": False,
    }
