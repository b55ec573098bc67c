"""An admission request's body: identity-encoded, bounded in size and in time.

    await read_body(request, timeout) -> bytes | Refusal
    Refusal(status, message, headers, close)

- a ``Content-Encoding`` other than ``identity`` (in any of several such headers, or in a list):
  415 with ``Accept-Encoding: identity`` (RFC 7694), before a byte of the body is read; the API
  server never compresses what it sends, and a decoded body could be far larger than the one
  sent, so nothing is decoded (the server runs with aiohttp's ``auto_decompress`` off);
- a ``Content-Type`` charset other than UTF-8: 415 (JSON is UTF-8, RFC 8259; a body that is
  not, a UTF-16 one without a charset, is a 400 of :func:`webhook.review.decode_review`);
- more than MAX_BODY_BYTES, declared or sent: 413;
- not all there within ``timeout`` seconds of the request head (``--body-timeout``): 408, and
  the connection is closed;
- the client gone before the end: one INFO line, and a 400 nobody reads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from aiohttp import web

from dra_bridge.webhook.review import MAX_BODY_BYTES

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Refusal:
    """Why a body was not read, as an HTTP status, a message and response headers."""

    status: int
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    close: bool = False
    """Answer with ``Connection: close`` (the rest of the body may still be on its way)."""


async def read_body(request: web.Request, timeout: float) -> bytes | Refusal:
    """The body of ``request``, or why not (module docstring)."""
    codings = [c.strip().lower() for h in request.headers.getall("Content-Encoding", ()) for c in h.split(",")]
    encoding = next((c for c in codings if c not in ("", "identity")), "")
    if encoding:
        return Refusal(
            415, f"Content-Encoding {encoding[:40]!r} is not accepted: send the body uncompressed", ACCEPT_IDENTITY
        )
    charset = (request.charset or "utf-8").lower()
    if charset not in ("utf-8", "utf8"):
        return Refusal(415, f"charset {charset[:40]!r} is not accepted: send the review as UTF-8 JSON")
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        return _too_large()
    chunks, size = [], 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.content.iter_chunked(65536):
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    return _too_large()
                chunks.append(chunk)
    except TimeoutError:
        return Refusal(408, f"the body did not arrive within {timeout:g} s", close=True)
    except (ConnectionError, web.RequestPayloadError) as exc:
        logger.info("client %s went away mid-body after %d bytes: %s", request.remote or "-", size, exc or type(exc))
        return Refusal(400, "the body ended early")
    return b"".join(chunks)


ACCEPT_IDENTITY = {"Accept-Encoding": "identity"}


def _too_large() -> Refusal:
    return Refusal(413, f"body exceeds the {MAX_BODY_BYTES} byte limit")
