"""The dra-bridge mutating admission webhook: an aiohttp HTTPS server around ``translate``.

Modules, one concern each: review (AdmissionReview types, decoding, the answer), decision
(pure request -> decision), patch (the JSON Patch by diffing, docs/design.md D12), handler (ensure,
measure, log), server (aiohttp app), runtime (files in force; the policy itself is
:mod:`translate.policy`), reload, tls, serving_check (the certificate against the caBundle and the
service name), templates (ensuring ResourceClaimTemplates), cluster (watch-fed caches), enrolment_gate
(act only for an enrolled namespace, docs/design.md D28), events
(audit Events), reconciler + reconcile_rules (template garbage collection and repair), metrics,
access (the API calls it makes; the I/O is the shared kube/ layer), drain (serving on after
SIGTERM, closing connections), certs, settings (the ``serve`` flag table: serve_flags), cli, errors.
Bounded input: body (a request body's size, time and encoding), connections and connection_limits
(the timeouts and the connection cap of each port), malformed_http (a request that does not
parse: one rate-limited INFO line).
"""

from dra_bridge.webhook.decision import Context, Decision, evaluate
from dra_bridge.webhook.errors import ReviewError, TemplateError, WebhookConfigError, WebhookError
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.patch import diff
from dra_bridge.webhook.review import decode_review
from dra_bridge.webhook.server import make_app
from dra_bridge.webhook.settings import Settings

__all__ = [
    "Admitter",
    "Context",
    "Decision",
    "ReviewError",
    "Settings",
    "TemplateError",
    "WebhookConfigError",
    "WebhookError",
    "decode_review",
    "diff",
    "evaluate",
    "make_app",
]
