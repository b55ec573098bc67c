"""What aiohttp logs about a request it cannot parse, as one bounded INFO line.

aiohttp's request handler logs a request it cannot parse (a header name with a space, a request
line past 8190 bytes, too many headers, bad chunked framing, ``Transfer-Encoding`` with
``Content-Length``, an HTTP/2 preface, ``Content-Length: -1``) through its ``logger``: at ERROR
with the whole traceback, about 555 bytes a request, from any caller that reaches the port. The
caller's mistake is no fault of the webhook: :class:`RequestLog`, passed as that logger, writes it
as one INFO line without traceback (its text escaped and clipped), at most
:data:`MAX_LINES_PER_WINDOW` lines every :data:`WINDOW_SECONDS`, the next line saying how many
were left out. The client still gets aiohttp's 400. Anything else aiohttp logs (an exception in
a handler: a bug) goes to aiohttp's own logger as before, traceback included.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp.http_exceptions import HttpProcessingError

from dra_bridge.kube.logs import escape

logger = logging.getLogger(__name__)

#: Lines about malformed requests written per window; the rest are counted.
MAX_LINES_PER_WINDOW = 10
WINDOW_SECONDS = 60.0
#: Characters of aiohttp's description of the error kept in the line.
MAX_DETAIL_CHARS = 200


class RequestLog:
    """The ``logger`` of aiohttp's RequestHandler (``web.AppRunner(logger=...)``): a parse error
    of the request is one rate-limited INFO line, everything else is aiohttp's logger's."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = logging.getLogger("aiohttp.server")
        self._clock = clock
        self._window_start = -WINDOW_SECONDS
        self._written = 0
        self._left_out = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def debug(self, msg: object, *args: object, exc_info: object = None, **kw: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):  # not HTTP at all (aiohttp: debug level)
            logger.debug("not an HTTP request from %s: %s", _remote(args), _detail(exc_info))
            return
        self.inner.debug(msg, *args, exc_info=exc_info, **kw)  # type: ignore[arg-type]

    def exception(self, msg: object, *args: object, exc_info: object = True, **kw: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            self.malformed(_remote(args), exc_info)
            return
        self.inner.exception(msg, *args, exc_info=exc_info, **kw)  # type: ignore[arg-type]

    def malformed(self, remote: str, exc: HttpProcessingError) -> None:
        """One INFO line about ``exc`` from ``remote``, unless this window's lines are spent."""
        now = self._clock()
        if now - self._window_start >= WINDOW_SECONDS:
            self._window_start, self._written = now, 0
        if self._written >= MAX_LINES_PER_WINDOW:
            self._left_out += 1
            return
        self._written += 1
        left_out, self._left_out = self._left_out, 0
        more = f" ({left_out} more not logged before this one)" if left_out else ""
        logger.info("malformed request from %s, answered 400: %s%s", remote, _detail(exc), more)


def _remote(args: tuple[object, ...]) -> str:
    return escape(str(args[0]))[:100] if args else "-"


def _detail(exc: HttpProcessingError) -> str:
    text = escape(str(exc.message or exc))
    return text if len(text) <= MAX_DETAIL_CHARS else text[:MAX_DETAIL_CHARS] + "..."
