"""kube.regular_files: a regular file read bounded, without blocking; every other file refused
with a FileRefused that names it and says which refusal it is."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from dra_bridge.kube.errors import FileRefused, KubeError
from dra_bridge.kube.regular_files import open_regular, read_regular, read_regular_text


def _refused(call: Callable[..., object], *args: object, **kwargs: object) -> FileRefused:
    with pytest.raises(FileRefused) as err:
        call(*args, **kwargs)
    return err.value


def test_a_regular_file_is_read_whole_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_regular(path, 100) == b"x" * 100
    assert read_regular(str(path), None) == b"x" * 100
    assert read_regular_text(path, 100, follow_symlinks=False) == "x" * 100


def test_a_file_larger_than_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big"
    with path.open("wb") as f:
        f.truncate(1 << 30)  # sparse: a read of it would take a GiB
    err = _refused(read_regular, path, 1 << 20)
    assert (err.kind, err.limit, err.size, err.path) == ("too-large", 1 << 20, 1 << 30, str(path))
    assert str(err) == f"{path}: larger than {1 << 20} bytes ({1 << 30})"
    assert isinstance(err, KubeError)


def test_a_file_that_grows_past_the_limit_while_read_is_refused_without_reading_past_it() -> None:
    # /proc files report size 0 and hold more: what a file growing after fstat looks like
    err = _refused(read_regular, "/proc/self/maps", 10)
    assert (err.kind, err.size) == ("too-large", None)
    assert str(err).endswith("larger than 10 bytes (it grew while read)")


def test_a_fifo_nobody_writes_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result: list[FileRefused] = []

    def read() -> None:
        try:
            read_regular(fifo, 10)
        except FileRefused as exc:
            result.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # unblock the hung open so the test process can end
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("opening the FIFO blocked")
    assert [(e.kind, str(e)) for e in result] == [
        ("not-regular", f"{fifo}: not a regular file (a FIFO, a device or a socket)")
    ]


def test_a_device_is_refused_before_any_read() -> None:
    assert _refused(read_regular, "/dev/zero", None).kind == "not-regular"  # None: no bound, never read


def test_a_directory_is_refused(tmp_path: Path) -> None:
    err = _refused(open_regular, tmp_path)
    assert (err.kind, str(err)) == ("directory", f"{tmp_path}: is a directory")


def test_a_symlink_is_followed_unless_refused(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("data", encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert read_regular_text(link, 10) == "data"
    err = _refused(read_regular_text, link, 10, follow_symlinks=False)
    assert (err.kind, str(err)) == ("symlink", f"{link}: is a symbolic link")
    dev = tmp_path / "dev"
    dev.symlink_to("/dev/zero")
    assert _refused(read_regular, dev, 10).kind == "not-regular"


def test_a_missing_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    err = _refused(read_regular, tmp_path / "absent", 10)
    assert err.kind == "missing" and isinstance(err.os_error, FileNotFoundError)
    assert str(err) == f"{tmp_path / 'absent'}: cannot read: No such file or directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"x")
    path.chmod(0)
    err = _refused(read_regular, path, 10)
    assert (err.kind, str(err)) == ("unreadable", f"{path}: cannot read: Permission denied")


def test_text_that_is_not_utf8_is_refused_where_decoded(tmp_path: Path) -> None:
    path = tmp_path / "latin1"
    path.write_bytes(b"caf\xe9\n")
    assert read_regular(path, 10) == b"caf\xe9\n"  # bytes: not decoded, not refused
    err = _refused(read_regular_text, path, 10)
    assert (err.kind, err.offset, err.byte) == ("not-utf8", 3, 0xE9)
    assert str(err) == f"{path}: not UTF-8 text (byte 0xe9 at offset 3)"


def test_no_descriptor_is_left_open_by_a_refusal(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 20)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        for call, args in ((read_regular, (big, 10)), (read_regular, ("/dev/zero", 10)), (open_regular, (tmp_path,))):
            _refused(call, *args)
    assert len(os.listdir("/proc/self/fd")) == before
