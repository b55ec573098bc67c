"""Exceptions raised by the bridge agent (the I/O edge around ``translate``).

The tree (third-party errors are chained with ``raise ... from``, never re-exported)::

    BridgeError                    base of every error raised by ``bridge``
    ├── SettingsError              a flag or environment variable is missing or malformed
    ├── PodResourcesError          the kubelet's PodResources socket is missing or an RPC failed
    ├── StateError                 the node-local inventory state cannot be read or written
    ├── CheckpointError            the prepared-claim checkpoint cannot be read or written
    ├── CdiError                   a CDI spec cannot be written or removed
    ├── NvmlError                  NVML is present but a query failed
    └── DevicePluginError          a device plugin's socket is missing or an RPC failed

API server failures (slices, Node, Events) are :mod:`kube.errors` (``KubeError`` and its
tree), shared with the webhook.

Interlock refusals (docs/design.md D6) are *not* exceptions: they are values returned by
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


class CheckpointError(BridgeError):
    """The prepared-claim checkpoint cannot be read, parsed or written."""


class CdiError(BridgeError):
    """One of our CDI specs cannot be written or removed."""


class NvmlError(BridgeError):
    """NVML is installed but a query failed."""


class DevicePluginError(BridgeError):
    """A device plugin's socket is missing or one of its v1beta1 RPCs failed."""
