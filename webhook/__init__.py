"""The dra-bridge mutating admission webhook: an aiohttp HTTPS server around ``translate``.

Modules, one concern each: admission (pure review -> decision and patch), handler (ensure,
measure, log), server (aiohttp app), policy, runtime (files in force), reload, tls,
templates (ensuring ResourceClaimTemplates), cluster (watch-fed caches), events (audit
Events), reconciler + reconcile_rules (template garbage collection and repair), metrics,
access (the API calls it makes; the I/O is the shared kube/ layer), certs, settings, cli, errors.
"""

from webhook.admission import Context, Decision, decode_review, diff, evaluate
from webhook.errors import ConfigError, PolicyError, ReviewError, TemplateError, WebhookError
from webhook.handler import Admitter
from webhook.policy import Policy, Translation, load_policy
from webhook.server import make_app
from webhook.settings import Settings

__all__ = [
    "Admitter",
    "ConfigError",
    "Context",
    "Decision",
    "Policy",
    "PolicyError",
    "ReviewError",
    "Settings",
    "TemplateError",
    "Translation",
    "WebhookError",
    "decode_review",
    "diff",
    "evaluate",
    "load_policy",
    "make_app",
]
