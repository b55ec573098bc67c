"""Which ``resource.k8s.io`` version to write (docs/design.md D7).

    newest_served(served) -> "resource.k8s.io/v1" | ".../v1beta2" | ".../v1beta1"     KubeConfigError if none
    await discover_resource_version(api) -> the same, asking the API server

The newest version the API server serves among those translate renders wins; a service's
own override (``--api-version``, ``--resource-api-version``) skips discovery.
"""

from __future__ import annotations

from collections.abc import Iterable

from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.errors import KubeConfigError
from dra_bridge.translate.names import API_VERSIONS

GROUP = "resource.k8s.io"


def newest_served(served: Iterable[str]) -> str:
    """The newest version translate renders that is in ``served`` (v1 > v1beta2 > v1beta1)."""
    served = list(served)
    for version in API_VERSIONS:
        if version in served:
            return version
    raise KubeConfigError(
        f"the API server serves none of {', '.join(API_VERSIONS)} (serves "
        f"{', '.join(served) or 'no resource.k8s.io version'})"
    )


async def discover_resource_version(api: KubeApi) -> str:
    """The newest served version (see the module docstring); KubeError when discovery fails."""
    return newest_served(await api.served_versions(GROUP))
