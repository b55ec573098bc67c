"""Input files of ``dra-migrate``: the UTF-8 text of a regular file, or one line saying why not.

    read_text(path) -> str        InputFileError: not a regular file (a FIFO, a device, a socket:
                                  refused before reading, so ``-f /dev/zero`` or a FIFO nobody
                                  writes cannot hang the command), cannot read, not UTF-8 text
    open_regular(path, dash=False) -> BinaryIO  the same refusals, the file opened for a streamed
                                  read; a directory "is a directory"; ``-`` (standard input,
                                  read only by ``-f``: ``dash``) refused in one line
    not_utf8(exc, offset) -> str  the phrase for text that is not UTF-8
    manifest_files(directory) -> list[Path]  the ``.yaml``/``.yml``/``.json`` files under a ``-f``
                                  directory, sorted; InputFileError naming an entry so named that
                                  is not a regular file (never left out unseen)

Opening never blocks (``O_NONBLOCK``: a FIFO is refused, not waited on; the rule is
:mod:`kube.regular_files`, here without a size bound). Data on a pipe is read with ``-f -`` from
standard input.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from dra_bridge.kube import regular_files
from dra_bridge.kube.errors import FileRefused
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
    _refuse_dash(path, dash)
    try:
        fd = regular_files.open_regular(path)
    except FileRefused as exc:
        raise _refused(exc, dash) from exc
    return os.fdopen(fd, "rb")


def read_text(path: str) -> str:
    """The UTF-8 text of the regular file at ``path``; see the module docstring."""
    _refuse_dash(path, dash=False)
    try:
        data = regular_files.read_regular(path, None)  # no bound: the inputs are the user's own files
    except FileRefused as exc:
        raise _refused(exc, dash=False) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: {not_utf8(exc)}") from exc


def _refuse_dash(path: str, dash: bool) -> None:
    if path == "-" and not dash:
        raise InputFileError("-: only -f reads standard input: give the file's path here")


def _refused(exc: FileRefused, dash: bool) -> InputFileError:
    if exc.kind == "directory":
        return InputFileError(f"{exc.path}: is a directory: give a file")
    if exc.kind == "not-regular":
        remedy = "a file or a directory, or - to read standard input" if dash else "a file"
        return InputFileError(f"{exc.path}: {exc.phrase}: give {remedy}")
    return InputFileError(str(exc))  # cannot read: ...


#: The names a ``-f`` directory's manifest files end in.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def manifest_files(directory: Path) -> list[Path]:
    """The files under ``directory`` (its sub-directories too, links to directories not
    followed) whose names end in MANIFEST_SUFFIXES, sorted; links to regular files are files.
    InputFileError for an entry so named that is not a regular file or a sub-directory: a FIFO,
    a device (also through a link), a link to nothing or to a directory, named as ``-f`` names it."""
    return sorted(p for p in directory.rglob("*") if p.suffix in MANIFEST_SUFFIXES and _is_file(p, directory))


def _is_file(entry: Path, directory: Path) -> bool:
    """Whether ``entry`` is a regular file (False: a sub-directory, whose files the walk reads)."""
    suffixes = "/".join(MANIFEST_SUFFIXES)
    remedy = f"every {suffixes} entry of {directory} is read as manifests: remove it, or give -f each file"
    try:
        mode = entry.stat().st_mode
    except OSError as exc:
        if entry.is_symlink():
            raise InputFileError(f"{entry}: a link to nothing ({os.readlink(entry)}): {remedy}") from exc
        raise InputFileError(f"{entry}: cannot read: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(mode):
        if entry.is_symlink():  # the walk does not follow it: its files would go unread
            raise InputFileError(f"{entry}: a link to a directory, not followed: give it as a -f of its own")
        return False
    if not stat.S_ISREG(mode):
        raise InputFileError(f"{entry}: not a regular file (a FIFO, a device or a socket): {remedy}")
    return True
