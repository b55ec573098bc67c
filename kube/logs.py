"""Logging of the three commands, set up in one place: :func:`configure`.

``dra-webhook``, ``dra-bridge`` and ``dra-migrate`` each call :func:`configure` with their
``--log-level`` (one of :data:`LEVELS`, in any case); it installs one handler on the root logger,
writing to stderr (``dra-migrate`` keeps stdout for its output) in :data:`FORMAT`, with
:class:`EscapingFormatter`.

One record is one physical line. The webhook logs what callers send (a pod's name, an
AdmissionReview's uid), so a control character in a field could forge a line or drive the
reader's terminal: the formatter writes every character that is not printable (C0, DEL, C1,
Unicode format characters such as the right-to-left override, the line and paragraph separators)
as an escape, ``\\n``, ``\\r``, ``\\t``, ``\\x1b``, ``\\u202e``, ``\\u2028``, and a backslash
as ``\\\\`` (so an escape always stands for one character the caller sent), in every field of
the record: the message after %-formatting with its arguments, the logger
name, fields given with ``extra``, the exception text and the stack (a traceback's line breaks
too, so it stays on its record's line).
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
"""The values ``--log-level`` accepts, in any case."""
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
"""Every command's log line."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape_of(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(text: str) -> str:
    """``text`` with each character that is not printable (:meth:`str.isprintable`: controls,
    format characters such as U+202E RIGHT-TO-LEFT OVERRIDE and U+FEFF, line and paragraph
    separators) written as its escape, and a backslash doubled, so an escape in the output always
    stands for one character of the input (module docstring)."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(c if c.isprintable() and c != "\\" else _escape_of(c) for c in text)


class EscapingFormatter(logging.Formatter):
    """A :class:`logging.Formatter` whose output has no control character: each is escaped.

    The whole formatted record is escaped, so every field in it is (the format's own text has
    none); the record itself is left as it was for other handlers.
    """

    def format(self, record: logging.LogRecord) -> str:
        return escape(super().format(record))


class _Handler(logging.StreamHandler[TextIO]):
    """The handler :func:`configure` installs (so a second call replaces it, never adds one)."""


def level_number(level: str) -> int:
    """The :mod:`logging` level of a ``--log-level`` value; ValueError for one not in :data:`LEVELS`."""
    name = level.strip().upper()
    if name not in LEVELS:
        raise ValueError(f"must be one of {', '.join(LEVELS)} (any case), got {level!r}")
    return int(logging.getLevelName(name))


def configure(level: str = "INFO", stream: TextIO | None = None) -> logging.Handler:
    """Log records of ``level`` and above to ``stream`` (stderr by default), one escaped line
    each, from every logger; replaces the handler an earlier call installed. Returns the handler
    (a command that runs in process, as ``dra-migrate``'s tests do, removes it when done)."""
    number = level_number(level)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    handler = _Handler(sys.stderr if stream is None else stream)
    handler.setFormatter(EscapingFormatter(FORMAT))
    root.addHandler(handler)
    root.setLevel(number)
    return handler
