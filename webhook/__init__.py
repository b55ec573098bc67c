"""The dra-bridge mutating admission webhook: an aiohttp HTTPS server around ``translate``.

Modules: admission (pure review -> decision), handler (ensure, measure, log), server
(aiohttp app), policy, runtime (files in force), reload, tls, templates, events, metrics,
kube, certs, settings, cli, errors.
"""

__all__: list[str] = []
