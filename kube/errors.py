"""One error tree for everything the API server (or the way to it) can answer.

The tree (the client's exceptions are chained with ``raise ... from``, never re-exported)::

    KubeError                      base of every error raised by ``kube``; ``status`` (HTTP code or
    │                              None), ``reason`` (the Status reason, e.g. "AlreadyExists")
    ├── KubeConfigError            no client can be configured (kubeconfig, service account), or
    │                              the server serves no resource.k8s.io version translate renders
    ├── InvalidName                a namespace or name that cannot be one API path segment:
    │                              refused before any call
    ├── FileRefused                a file read by ``regular_files`` is missing, not a regular
    │                              file, too large or not UTF-8: ``kind`` says which
    ├── Unavailable                unreachable (refused, TLS, protocol), timed out, 5xx, 429
    └── ApiError                   the server answered with another error status
        ├── Unauthorized           401
        ├── Forbidden              403 (RBAC, or an admission policy)
        ├── NotFound               404
        ├── Conflict               409: a stale resourceVersion or a failed precondition
        │   └── AlreadyExists      409 with reason AlreadyExists (create of an existing name)
        ├── Gone                   410: a watch or list continue token too old; relist
        └── Invalid                422: the object failed validation

Services catch these classes, never HTTP codes: ``except AlreadyExists`` rather than
``exc.status == 409``. :func:`from_api_exception` and :func:`from_status` map an answer;
:func:`is_connection_failure` says what counts as "unreachable".
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Literal

#: Which refusal a :class:`FileRefused` is.
FileKind = Literal["missing", "unreadable", "symlink", "directory", "not-regular", "too-large", "not-utf8"]


class KubeError(Exception):
    """Base class of every error raised by the ``kube`` package."""

    def __init__(self, message: str, status: int | None = None, reason: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.detail = detail or message
        """The server's whole Status message (the exception's text cuts it at 300 characters)."""


class KubeConfigError(KubeError):
    """No usable client configuration, or nothing served that we can write."""


class KubeconfigFileError(KubeConfigError):
    """The kubeconfig file cannot be read as a YAML file (not a regular file, too large, not
    UTF-8, not YAML); the message names the file."""


class InvalidName(KubeError):
    """A namespace that is not a DNS label, or a name that cannot be one path segment (``.``,
    ``..``, a ``/`` or ``%``): no call is made."""


class FileRefused(KubeError):
    """A file :mod:`kube.regular_files` refuses; the message names it. ``kind`` is one of
    ``missing``, ``unreadable`` (``os_error``: why), ``symlink``, ``directory``, ``not-regular``
    (a FIFO, a device or a socket), ``too-large`` (``limit``; ``size``, None when the file grew
    past ``limit`` while read) and ``not-utf8`` (``offset`` and value ``byte`` of the first bad
    byte). Callers word their own message from these and raise their package's error."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        kind: FileKind,
        *,
        os_error: OSError | None = None,
        limit: int = 0,
        size: int | None = None,
        offset: int = 0,
        byte: int = 0,
    ) -> None:
        self.path = os.fspath(path)
        self.kind = kind
        self.os_error = os_error
        self.limit = limit
        self.size = size
        self.offset = offset
        self.byte = byte
        super().__init__(f"{self.path}: {self.phrase}")

    @property
    def phrase(self) -> str:
        """The refusal without the path: ``cannot read: Permission denied``, ``is a directory``,
        ``larger than 1048576 bytes (2000000)``, ``not UTF-8 text (byte 0xff at offset 3)``..."""
        if self.kind in ("missing", "unreadable"):
            error = self.os_error
            return f"cannot read: {(error.strerror or error) if error is not None else 'unknown error'}"
        if self.kind == "too-large":
            grown = "it grew while read" if self.size is None else str(self.size)
            return f"larger than {self.limit} bytes ({grown})"
        if self.kind == "not-utf8":
            return f"not UTF-8 text (byte 0x{self.byte:02x} at offset {self.offset})"
        return {
            "symlink": "is a symbolic link",
            "directory": "is a directory",
        }.get(self.kind, "not a regular file (a FIFO, a device or a socket)")


class Unavailable(KubeError):
    """The API server could not be reached or answered 5xx / 429: try again later."""


class ApiError(KubeError):
    """The API server answered with an error status (one of the subclasses where it has a name)."""


class Unauthorized(ApiError):
    """401: the credentials were refused."""


class Forbidden(ApiError):
    """403: RBAC (or an admission policy) refused the call."""


class NotFound(ApiError):
    """404: no such object (or no such resource served)."""


class Conflict(ApiError):
    """409: the object changed since it was read, or a precondition failed."""


class AlreadyExists(Conflict):
    """409 AlreadyExists: a create found the name taken."""


class Gone(ApiError):
    """410: the resourceVersion is too old (a watch must relist)."""


class Invalid(ApiError):
    """422: the object failed validation."""


_BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
}


def from_status(what: str, status: int, body: Any = None, reason: str = "") -> KubeError:
    """The error for an HTTP ``status`` with its Status ``body`` (a dict, JSON text or None)."""
    if isinstance(body, bytes | str):
        try:
            body = json.loads(body)
        except ValueError:
            body = {"message": str(body if isinstance(body, str) else body.decode(errors="replace"))}
    doc: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
    reason = str(doc.get("reason") or reason or "")
    message = str(doc.get("message") or "")
    text = f"{what}: {status} {reason}" + (f": {message[:300]}" if message else "")
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists(text, status, reason, message)
    if status == 429 or status >= 500 or status == 0:
        return Unavailable(text, status or None, reason, message)
    return _BY_STATUS.get(status, ApiError)(text, status, reason, message)


def from_api_exception(what: str, exc: Any) -> KubeError:
    """The error for a kubernetes-asyncio ``ApiException`` (raise it ``from exc``)."""
    return from_status(
        what, int(getattr(exc, "status", 0) or 0), getattr(exc, "body", None), str(getattr(exc, "reason", "") or "")
    )


def is_connection_failure(exc: BaseException) -> bool:
    """True for an OSError (refused, TLS: ssl.SSLError is one), a timeout or an aiohttp client
    error: the API server could not be reached or did not answer."""
    return isinstance(exc, OSError | TimeoutError) or type(exc).__module__.startswith("aiohttp")
