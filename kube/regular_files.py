"""Reading a regular file, bounded, without blocking: the one rule the three commands' file
inputs share (a kubeconfig, the webhook's watched files, the node agent's state files, dra-migrate's
inputs).

    fd = open_regular(path, follow_symlinks=True)    an open descriptor of a regular file, or FileRefused
    read_regular(path, limit, follow_symlinks=True) -> bytes   its bytes, at most ``limit`` (None: no bound)
    read_regular_text(path, limit, ...) -> str       the same, decoded as UTF-8

Opening never blocks (``O_NONBLOCK``: a FIFO nobody writes is refused, not waited on); the kind of
file is checked on the open descriptor (``fstat``), so a FIFO, a device (a link to ``/dev/zero``),
a socket or a directory is refused before any read; ``follow_symlinks=False`` opens with
``O_NOFOLLOW`` and refuses a symbolic link. A file larger than ``limit`` is refused by its size,
and never read past ``limit + 1`` bytes if it grows while read.

Every refusal is a :class:`kube.errors.FileRefused` naming the path, with ``kind`` saying which
refusal it is and the facts a caller needs to word it its own way (``size``, ``limit``,
``os_error``, the offset and value of the first byte that is not UTF-8): each package wraps it in
its own exception tree.
"""

from __future__ import annotations

import errno
import os
import stat

from dra_bridge.kube.errors import FileRefused

#: One ``read`` call at most: 64 KiB.
CHUNK = 1 << 16


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> int:
    """An open read-only descriptor (close-on-exec, non-blocking) of the regular file at ``path``;
    FileRefused (``missing``, ``unreadable``, ``symlink``, ``directory``, ``not-regular``) otherwise.
    The caller closes it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise FileRefused(path, "missing", os_error=exc) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise FileRefused(path, "symlink", os_error=exc) from exc
        raise FileRefused(path, "unreadable", os_error=exc) from exc
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise FileRefused(path, "unreadable", os_error=exc) from exc
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FileRefused(path, "directory" if stat.S_ISDIR(mode) else "not-regular")
    return fd


def read_regular(path: str | os.PathLike[str], limit: int | None, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them (None: unbounded);
    FileRefused as :func:`open_regular`, or ``too-large`` (``size``: the file's size, None when
    it grew past ``limit`` while read), or ``unreadable`` when a read fails."""
    fd = open_regular(path, follow_symlinks=follow_symlinks)
    try:
        if limit is not None:
            size = os.fstat(fd).st_size
            if size > limit:
                raise FileRefused(path, "too-large", limit=limit, size=size)
        chunks, total = [], 0
        while chunk := os.read(fd, CHUNK if limit is None else min(CHUNK, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if limit is not None and total > limit:
                raise FileRefused(path, "too-large", limit=limit)
        return b"".join(chunks)
    except OSError as exc:
        raise FileRefused(path, "unreadable", os_error=exc) from exc
    finally:
        os.close(fd)


def read_regular_text(path: str | os.PathLike[str], limit: int | None, *, follow_symlinks: bool = True) -> str:
    """The UTF-8 text of the regular file at ``path``: :func:`read_regular`, then ``not-utf8``
    (``offset``, ``byte``: the first byte that is not UTF-8) when it does not decode."""
    data = read_regular(path, limit, follow_symlinks=follow_symlinks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(path, "not-utf8", offset=exc.start, byte=data[exc.start]) from None
