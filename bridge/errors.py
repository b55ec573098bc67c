"""Exceptions raised by the bridge agent (the I/O edge around ``translate``).

The tree (third-party errors are chained with ``raise ... from``, never re-exported)::

    BridgeError                    base of every error raised by ``bridge``
    ├── SettingsError              a flag or environment variable is missing or malformed
    ├── PodResourcesError          the kubelet's PodResources socket is missing or an RPC failed
    ├── StateError                 the node-local inventory state cannot be read or written
    ├── PublishError               the API server refused or could not be reached (slices, Node, Events)
    └── NvmlError                  NVML is present but a query failed

Interlock refusals (design decision 6) are *not* exceptions: they are values returned by
:func:`bridge.interlocks.evaluate`, so the agent can report every one of them.
"""

from __future__ import annotations


class BridgeError(Exception):
    """Base class of every error raised by the ``bridge`` package."""


class SettingsError(BridgeError):
    """A command-line flag or its environment twin is missing or malformed."""


class PodResourcesError(BridgeError):
    """The kubelet's PodResources API could not be reached or answered with an error."""


class StateError(BridgeError):
    """The node-local inventory state file cannot be read, parsed or written."""


class PublishError(BridgeError):
    """An API server request failed (unreachable, refused, or an unexpected answer).

    ``code`` is the HTTP status when the server answered (404, 409, ...), else None.
    """

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class NvmlError(BridgeError):
    """NVML is installed but a query failed."""
