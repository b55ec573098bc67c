"""Exceptions raised by the webhook package.

The tree (third-party errors are chained with ``raise ... from``, never re-exported)::

    WebhookError                   base of every error raised by ``webhook``
    ├── WebhookConfigError         a flag, environment variable or file given at startup is unusable
    │   │                          (a policy file that violates its schema: translate's PolicyError,
    │   │                          its message kept)
    │   └── ConfigFileError        a watched file cannot be read within the bounds (not a regular
    │                              file, larger than the bound, unreadable: webhook.reload)
    ├── ReviewError                the HTTP body is not an AdmissionReview admission.k8s.io/v1
    │                              (carries the HTTP ``status``: 400, or 413 when too large)
    └── TemplateError              a ResourceClaimTemplate could not be ensured (API down,
                                   RBAC, deadline, being deleted, a different spec under its name)

Pods that cannot be translated are not errors: they become findings and warnings.
"""

from __future__ import annotations


class WebhookError(Exception):
    """Base class of every error raised by the ``webhook`` package."""


class WebhookConfigError(WebhookError):
    """A startup setting (flag, env twin, certificate, catalog or policy file) is unusable."""


class ConfigFileError(WebhookConfigError):
    """A watched file that cannot be read within the bounds (not regular, too large, unreadable)."""


class ReviewError(WebhookError):
    """A request body that is not a usable AdmissionReview; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class TemplateError(WebhookError):
    """A ResourceClaimTemplate could not be made to exist with the wanted spec."""
