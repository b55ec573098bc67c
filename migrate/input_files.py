"""Input files of ``dra-migrate``: the UTF-8 text of a regular file, or one line saying why not.

    read_text(path) -> str        InputFileError: not a regular file (a FIFO, a device, a socket:
                                  refused before reading, so ``-f /dev/zero`` or a FIFO nobody
                                  writes cannot hang the command), cannot read, not UTF-8 text
    open_regular(path, dash=False) -> BinaryIO  the same refusals, the file opened for a streamed
                                  read; a directory "is a directory"; ``-`` (standard input,
                                  read only by ``-f``: ``dash``) refused in one line
    not_utf8(exc, offset) -> str  the phrase for text that is not UTF-8

Opening never blocks (``O_NONBLOCK``: a FIFO is refused, not waited on). Data on a pipe is read
with ``-f -`` from standard input.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from dra_bridge.migrate.errors import InputFileError


def not_utf8(exc: UnicodeDecodeError, offset: int = 0) -> str:
    """``not UTF-8 text (byte 0xff at offset 12)...``: where the first bad byte is (``offset``: where
    the decoded chunk starts in the whole input), and the remedy."""
    return (
        f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start + offset}); the "
        "inputs are UTF-8: re-encode it, e.g. iconv -t UTF-8"
    )


def open_regular(path: str, *, dash: bool = False) -> BinaryIO:
    """The regular file at ``path`` opened for reading in binary; see the module docstring.
    ``dash``: ``-`` would have read standard input (``-f``), so the refusal of a FIFO says so;
    elsewhere ``-`` itself is refused, naming ``-f`` as what reads standard input."""
    if path == "-" and not dash:
        raise InputFileError("-: only -f reads standard input: give the file's path here")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):  # before fdopen, which refuses a directory with IsADirectoryError
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise InputFileError(f"{path}: is a directory: give a file")
        remedy = "a file or a directory, or - to read standard input" if dash else "a file"
        raise InputFileError(f"{path}: not a regular file (a FIFO, a device or a socket): give {remedy}")
    return os.fdopen(fd, "rb")


def read_text(path: str) -> str:
    """The UTF-8 text of the regular file at ``path``; see the module docstring."""
    with open_regular(path) as fh:
        try:
            data = fh.read()
        except OSError as exc:
            raise InputFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: {not_utf8(exc)}") from exc
