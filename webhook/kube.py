"""kubernetes-asyncio plumbing: configuration and resource.k8s.io version discovery.

    await api_client(kubeconfig | None) -> ApiClient      (in-cluster config when None)
    await discover_api_version(api) -> "resource.k8s.io/v1" | ".../v1beta2" | ".../v1beta1"

Discovery picks the newest version the API server serves among those translate renders
(design decision 7); ConfigError when it serves none of them.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from translate.names import API_VERSIONS
from webhook.errors import ConfigError


async def api_client(kubeconfig: Path | None) -> client.ApiClient:
    """An ApiClient from a kubeconfig file, or from the pod's service account when None."""
    cfg = client.Configuration()
    try:
        if kubeconfig is None:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    except (config.ConfigException, OSError) as exc:
        where = kubeconfig or "in-cluster service account"
        raise ConfigError(f"cannot configure the Kubernetes client from {where}: {exc} "
                          "(pass --kubeconfig FILE outside a cluster)") from exc
    return client.ApiClient(cfg)


async def discover_api_version(api: client.ApiClient) -> str:
    """The newest resource.k8s.io version served (see the module docstring)."""
    try:
        groups = await client.ApisApi(api).get_api_versions()
    except (TimeoutError, ApiException, OSError, aiohttp.ClientError) as exc:
        raise ConfigError(f"API discovery failed: {type(exc).__name__}: {exc}") from exc
    served = {v.group_version for g in groups.groups if g.name == "resource.k8s.io" for v in g.versions}
    for version in API_VERSIONS:
        if version in served:
            return version
    raise ConfigError(f"the API server serves no resource.k8s.io version this webhook renders "
                      f"({', '.join(API_VERSIONS)}); pass --api-version to force one")
