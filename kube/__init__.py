"""The shared Kubernetes layer of dra-bridge: everything the services say to the API server.

Modules, one concern each: client (connection, raw JSON requests and watch streams over
kubernetes-asyncio's ApiClient), api (the typed calls: KubeApi, ApiServer), resources (the
resources some service calls, REST paths, ApiCall permissions), discovery (the
resource.k8s.io version to write), errors (one error tree), backoff, events (core/v1 Event
builder), observed (what the API server answered lately: whether it answers, what RBAC
refuses), flags (flag table with environment twins), logs (the commands' log set-up: one line
per record, control characters escaped), streams (a closed or broken stdout: an exit status),
regular_files (a file input read bounded, without blocking: the one rule of every command's
file reads), fake (an in-memory KubeApi for component tests).

Layers (import-linter, docs/design.md D23): migrate | webhook | bridge above kube, translate below
it. Objects are plain dicts, never kubernetes-asyncio's generated models.
"""

from dra_bridge.kube.api import ApiServer, KubeApi, api_call
from dra_bridge.kube.backoff import Backoff
from dra_bridge.kube.client import Client, connect
from dra_bridge.kube.discovery import discover_resource_version, newest_served
from dra_bridge.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeConfigError,
    KubeError,
    NotFound,
    Unauthorized,
    Unavailable,
)
from dra_bridge.kube.events import event, post_event
from dra_bridge.kube.flags import Flag, FlagTable
from dra_bridge.kube.resources import ApiCall, Resource, api_path

__all__ = [
    "AlreadyExists",
    "ApiCall",
    "ApiError",
    "ApiServer",
    "Backoff",
    "Client",
    "Conflict",
    "Flag",
    "FlagTable",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeApi",
    "KubeConfigError",
    "KubeError",
    "NotFound",
    "Resource",
    "Unauthorized",
    "Unavailable",
    "api_call",
    "api_path",
    "connect",
    "discover_resource_version",
    "event",
    "newest_served",
    "post_event",
]
