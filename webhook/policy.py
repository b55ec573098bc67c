"""The webhook's policy (docs/design.md D8): the rules live in :mod:`translate.policy` (pure,
shared with ``dra-migrate report --policy``); this module re-exports them and raises the
webhook's :class:`~webhook.errors.PolicyError` (a ConfigError: exit 1 at startup, the last good
policy kept on reload) with the same message. docs/webhook.md, "Policy", gives the file.
"""

from __future__ import annotations

from dra_bridge.translate import policy as rules
from dra_bridge.translate.errors import PolicyError as RulesError
from dra_bridge.translate.policy import (
    POLICY_API_VERSION,
    SYSTEM_NAMESPACES,
    HamiSlicing,
    Match,
    OnError,
    Policy,
    Rule,
    Subject,
    Translation,
    policy_remedy,
    setting_names,
)
from dra_bridge.webhook.errors import PolicyError


def parse_policy(doc: object, source: str) -> Policy:
    """:func:`translate.policy.parse_policy`, raising the webhook's PolicyError."""
    try:
        return rules.parse_policy(doc, source)
    except RulesError as exc:
        raise PolicyError(str(exc)) from exc


def load_policy(text: str, source: str) -> Policy:
    """:func:`translate.policy.load_policy`, raising the webhook's PolicyError."""
    try:
        return rules.load_policy(text, source)
    except RulesError as exc:
        raise PolicyError(str(exc)) from exc


__all__ = [
    "POLICY_API_VERSION",
    "SYSTEM_NAMESPACES",
    "HamiSlicing",
    "Match",
    "OnError",
    "Policy",
    "Rule",
    "Subject",
    "Translation",
    "load_policy",
    "parse_policy",
    "policy_remedy",
    "setting_names",
]
