"""Standard streams of the command lines: a closed or broken standard output is an exit status,
never a traceback.

    stdout, stderr = standard_streams(stdout, stderr)   the process's when None; a descriptor the
                                                        caller closed (``>&-``) becomes a stream
                                                        whose writes fail as a broken pipe does
    guarded(run, stdout) -> int                         run(); stdout flushed; a broken pipe
                                                        (also at the flush) -> EXIT_CLOSED_OUTPUT,
                                                        quietly (kube.flags.Parser does the same
                                                        for --help and --version)
    silence(stdout)                                     after a broken pipe: fd 1 -> /dev/null

Ctrl-C (KeyboardInterrupt) that reaches :func:`guarded` exits :data:`EXIT_INTERRUPTED`, 130, quietly too.

A reader that goes away before everything is written (``dra-migrate report | head``) is not an
error of the command: nothing is printed and the exit status is :data:`EXIT_CLOSED_OUTPUT`, 141,
the status a shell reports for a command that a closed pipe killed with SIGPIPE (``yes | head``),
so ``set -o pipefail`` scripts treat ``dra-migrate`` as they treat ``cat``. Python ignores
SIGPIPE, so the write raises BrokenPipeError instead; the process's standard output is then
pointed at ``/dev/null``, so that the interpreter's last flush has nothing to fail on
(https://docs.python.org/3/library/signal.html#note-on-sigpipe).

With ``PYTHONUNBUFFERED=1`` (the image sets it) the process's standard output has no buffered
layer: its text layer hands each write to the raw file and ignores a partial write's count, so a
large write that the reader's going away cut short is lost without an error, and the command
would exit 0. :func:`standard_streams` puts a text layer over a raw file that resumes partial
writes (still unbuffered), so the next write meets the broken pipe, or a slow reader gets it all.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

#: Exit status when standard output was closed before everything was written (128 + SIGPIPE).
EXIT_CLOSED_OUTPUT = 141
#: Exit status after Ctrl-C (128 + SIGINT), as a shell reports it; no traceback.
EXIT_INTERRUPTED = 130


class _WholeWrites(io.RawIOBase):
    """The process's standard output descriptor, each write resumed until all of it is written;
    closing it leaves the descriptor open."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: ReadableBuffer) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._fd, view[done:])
        return done


def _whole_writes(out: TextIO) -> TextIO:
    """``out`` when it buffers (or is no process stream); else the same descriptor, encoding and
    error handling through :class:`_WholeWrites`."""
    buffer = getattr(out, "buffer", None)
    if out is not sys.__stdout__ or not isinstance(buffer, io.RawIOBase):
        return out
    try:
        fd = out.fileno()
    except (OSError, ValueError):
        return out
    return io.TextIOWrapper(  # type: ignore[type-var]
        _WholeWrites(fd),
        encoding=out.encoding,
        errors=out.errors,
        line_buffering=out.line_buffering,
        write_through=True,
    )


class _ClosedOutput(io.StringIO):
    """Standard output whose descriptor was closed before the command started."""

    def write(self, _text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "standard output is closed")


def standard_streams(stdout: TextIO | None, stderr: TextIO | None) -> tuple[TextIO, TextIO]:
    """``stdout`` and ``stderr``, the process's where None (looked up now, so pytest's capture sees
    them); a process stream Python found closed (None) becomes a closed output, or a sink for stderr."""
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    return (_ClosedOutput() if out is None else _whole_writes(out)), (io.StringIO() if err is None else err)


def silence(stdout: object) -> None:
    """Point the process's standard output at /dev/null when ``stdout`` is it (see the module docstring)."""
    real = sys.__stdout__
    if real is None:
        return
    try:
        fd = real.fileno()
        if stdout is not real and stdout.fileno() != fd:  # type: ignore[attr-defined]
            return
    except (OSError, ValueError, AttributeError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def guarded(run: Callable[[], int], stdout: TextIO) -> int:
    """``run()``'s exit code, ``stdout`` flushed; EXIT_CLOSED_OUTPUT, printing nothing, when
    ``stdout`` turns out closed or broken; EXIT_INTERRUPTED after Ctrl-C. A SystemExit
    (argparse's ``--help``) keeps its code unless the flush after it finds the pipe broken."""
    try:
        try:
            code = run()
        except SystemExit:
            stdout.flush()
            raise
        stdout.flush()
        return code
    except BrokenPipeError:
        silence(stdout)
        return EXIT_CLOSED_OUTPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
