"""The webhook's policy: how to translate, per scope (docs/design.md D8). Pure: parsing and matching.

Owned by translate so that every front end judges a pod as the webhook would: ``dra-webhook``
(which turns a :class:`PolicyError` into its ``WebhookConfigError``: exit 1 at startup, the
last good policy kept on a reload) and ``dra-migrate report --policy`` / ``convert --policy``
(:func:`load_policy_file` also reads the policy out of a ConfigMap manifest, the way it is
usually shipped).

The mode (audit or enforce) is chosen by the path the API server calls, never here. A
policy file (YAML) holds defaults and an ordered list of rules; the first rule whose
``match`` fits the AdmissionReview overrides the defaults key by key::

    apiVersion: policy.dra-bridge.io/v1      # optional; the only version
    defaults:
      convert: true                # false: leave the pods in scope untouched (no patch, no warning)
      keepLegacy: false            # keep pods whose translation is partial on the device plugin
      hamiSlicing: unsupported     # unsupported | whole-devices
      onError: admit-unchanged     # admit-unchanged | deny (a template cannot be ensured)
      deferToKEP5004: false        # leave count-only pods to KEP-5004 DeviceClasses that serve them
      ignoreLegacyQuota: false     # convert even where a quota limits only the legacy resource (lifts it)
      draSchedulers: []            # schedulers besides default-scheduler that support DRA (others stay legacy)
      failRequestsGreaterThanOne: false  # the device plugin fails shared requests > 1 (such pods stay legacy)
      alignment: none              # none | numa | pcie: keep the Topology Manager's alignment as a claim constraint
      alignmentScope: container    # container | pod (as topologyManagerScope)
      convertHalfMigrated: false   # convert pods that already have DRA claims beside a legacy request
    rules:
      - name: training             # for logs and warnings
        match:                     # every key given must match (AND); lists are alternatives (OR)
          namespaces: [ml-*]       # namespace names, shell-style patterns
          podLabels: {team: ml}    # equality on the pod's labels
          ownerKinds: [Job]        # kind of the pod's controller ownerReference ("" = none)
          schedulerNames: [default-scheduler]
        keepLegacy: true

Rules match only what the review carries (docs/design.md D8): no namespace lookups; namespace
labels belong in the registration's namespaceSelector. Whatever the policy says, pods in
:data:`SYSTEM_NAMESPACES` and in the webhook's own namespace are never converted (decided in
``webhook.decision``, behind the registration's exclusion of the same namespaces).
:func:`load_policy` validates everything (types, duplicate keys, nesting at most
:data:`~translate.strict_yaml.MAX_CONFIG_DEPTH` deep) and raises :class:`PolicyError` naming the key.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, assert_never

import yaml

from dra_bridge.translate.errors import PolicyError
from dra_bridge.translate.findings import Finding, Remedy
from dra_bridge.translate.plan.options import OnError, Options, policy_specs
from dra_bridge.translate.strict_yaml import MAX_CONFIG_DEPTH, load_bounded, too_deep

POLICY_API_VERSION = "policy.dra-bridge.io/v1"
#: Policy key -> Options attribute (derived from the options model).
_SETTING_KEYS = {s.policy_key: s.attribute for s in policy_specs()}
_SPECS = {s.policy_key: s for s in policy_specs()}
#: The keys of a rule's ``match`` and of the document's top level (the chart's schema is generated from them).
MATCH_KEYS = ("namespaces", "podLabels", "ownerKinds", "schedulerNames")
TOP_LEVEL_KEYS = ("apiVersion", "defaults", "rules")
#: The keys of a rule besides its settings.
RULE_KEYS = ("name", "match")
_MATCH_KEYS = MATCH_KEYS
#: Namespaces the webhook never converts, whatever the policy says (the webhook's own is added by
#: ``webhook.settings``): a system pod must never wait on a template or on this webhook.
SYSTEM_NAMESPACES = frozenset({"kube-system"})


@dataclass(frozen=True)
class Match:
    """A rule's selector; an empty field matches everything."""

    namespaces: tuple[str, ...] = ()
    pod_labels: tuple[tuple[str, str], ...] = ()
    owner_kinds: tuple[str, ...] = ()
    scheduler_names: tuple[str, ...] = ()

    def fits(self, subject: Subject) -> bool:
        """True when every given selector matches ``subject``."""
        if self.namespaces and not any(fnmatch.fnmatchcase(subject.namespace, p) for p in self.namespaces):
            return False
        if any(subject.labels.get(k) != v for k, v in self.pod_labels):
            return False
        if self.owner_kinds and subject.owner_kind not in self.owner_kinds:
            return False
        scheduler = subject.scheduler_name or "default-scheduler"
        return not (self.scheduler_names and scheduler not in self.scheduler_names)


@dataclass(frozen=True)
class Subject:
    """What an AdmissionReview tells about the pod: all a rule may look at."""

    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    owner_kind: str = ""
    scheduler_name: str = ""


@dataclass(frozen=True)
class Rule:
    """A named match plus the settings it overrides (``{attribute: value}``)."""

    name: str
    match: Match
    overrides: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Policy:
    """A validated policy. Build it with :func:`load_policy`; ``source`` names the file."""

    defaults: Options = Options()
    rules: tuple[Rule, ...] = ()
    source: str = "built-in defaults"

    def settings_for(self, subject: Subject) -> Options:
        """The defaults, overridden by the first rule that fits ``subject``."""
        for rule in self.rules:
            if rule.match.fits(subject):
                return replace(self.defaults, rule=rule.name, **dict(rule.overrides))
        return self.defaults


def _fail(source: str, key: str, rule: str) -> PolicyError:
    return PolicyError(f"{source}: {key}: {rule}")


def _settings(raw: object, source: str, key: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise _fail(source, key, "must be a mapping")
    out: dict[str, Any] = {}
    for name, value in raw.items():
        path = f"{key}.{name}"
        spec = _SPECS.get(name)
        if spec is None:
            raise _fail(source, path, f"unknown key (known: {', '.join(_SETTING_KEYS)})")
        if spec.kind == "names":
            value = _strings(value, source, path)
            if spec.valid is not None and not all(spec.valid(v) for v in value):
                raise _fail(source, path, spec.rule)
        elif not spec.accepts(value):
            raise _fail(source, path, f"must be {spec.must()}")
        out[spec.attribute] = value
    return out


def _strings(raw: object, source: str, key: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise _fail(source, key, "must be a list of strings")
    return tuple(raw)


def _match(raw: object, source: str, key: str) -> Match:
    if not isinstance(raw, Mapping):
        raise _fail(source, key, "must be a mapping")
    for name in raw:
        if name not in _MATCH_KEYS:
            raise _fail(source, f"{key}.{name}", f"unknown key (known: {', '.join(_MATCH_KEYS)})")
    labels = raw.get("podLabels", {})
    if not isinstance(labels, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise _fail(source, f"{key}.podLabels", "must map label names to string values")
    return Match(
        namespaces=_strings(raw.get("namespaces", []), source, f"{key}.namespaces"),
        pod_labels=tuple(sorted(labels.items())),
        owner_kinds=_strings(raw.get("ownerKinds", []), source, f"{key}.ownerKinds"),
        scheduler_names=_strings(raw.get("schedulerNames", []), source, f"{key}.schedulerNames"),
    )


def parse_policy(doc: object, source: str) -> Policy:
    """Validate a decoded policy document; raise PolicyError naming the offending key."""
    if doc is None:
        return Policy(source=source)
    if not isinstance(doc, Mapping):
        raise _fail(source, "(top level)", "must be a mapping")
    known = TOP_LEVEL_KEYS
    for name in doc:
        if name not in known:
            raise _fail(source, str(name), f"unknown key (known: {', '.join(known)})")
    if doc.get("apiVersion", POLICY_API_VERSION) != POLICY_API_VERSION:
        raise _fail(source, "apiVersion", f"must be {POLICY_API_VERSION}")
    raw_defaults = doc.get("defaults")
    defaults = Options(**_settings({} if raw_defaults is None else raw_defaults, source, "defaults"))
    raw_rules = doc.get("rules")
    raw_rules = [] if raw_rules is None else raw_rules
    if not isinstance(raw_rules, list):
        raise _fail(source, "rules", "must be a list")
    rules = []
    for i, raw in enumerate(raw_rules):
        key = f"rules[{i}]"
        if not isinstance(raw, Mapping):
            raise _fail(source, key, "must be a mapping")
        name = raw.get("name", key)
        if not isinstance(name, str) or not name:
            raise _fail(source, f"{key}.name", "must be a non-empty string")
        if "match" not in raw:
            raise _fail(source, f"{key}.match", "is required (use {} to match every pod)")
        match = _match(raw["match"], source, f"{key}.match")
        overrides = _settings({k: v for k, v in raw.items() if k not in RULE_KEYS}, source, key)
        rules.append(Rule(name, match, tuple(sorted(overrides.items()))))
    return Policy(defaults, tuple(rules), source)


def _load_yaml(text: str, source: str) -> Any:
    """The YAML document in ``text``; PolicyError naming ``source`` when it is not valid YAML or
    nests deeper than MAX_CONFIG_DEPTH (naming the key) or expands past its alias budget."""
    try:
        doc = load_bounded(text, source, PolicyError)  # duplicate keys refused, as kubectl does
    except yaml.YAMLError as exc:
        raise PolicyError(f"{source}: not valid YAML: {exc}") from exc
    deep = too_deep(doc)
    if deep is not None:
        raise _fail(source, deep, f"nests deeper than {MAX_CONFIG_DEPTH} levels")
    return doc


def load_policy(text: str, source: str) -> Policy:
    """Parse and validate policy YAML text; raise PolicyError (source, key, rule)."""
    return parse_policy(_load_yaml(text, source), source)


def load_policy_file(text: str, source: str) -> Policy:
    """Like :func:`load_policy`, and a ConfigMap manifest holding the policy under one
    ``data`` key (the key, e.g. ``policy.yaml``, is added to ``source``). PolicyError names
    the file, the key and the rule."""
    doc = _load_yaml(text, source)
    if isinstance(doc, Mapping) and doc.get("kind") == "ConfigMap":
        data = doc.get("data")
        if not isinstance(data, Mapping) or len(data) != 1:
            raise _fail(source, "data", "a policy ConfigMap must hold exactly one key (the policy file)")
        key, value = next(iter(data.items()))
        if not isinstance(value, str):
            raise _fail(source, f"data.{key}", "must be the policy's YAML text")
        return load_policy(value, f"{source}: data.{key}")
    return parse_policy(doc, source)


def setting_names() -> tuple[str, ...]:
    """The attributes of :class:`~translate.plan.options.Options` the policy sets, in the order of
    its keys (derived from the options model; for documentation and tests)."""
    return tuple(_SETTING_KEYS.values())


def policy_remedy(finding: Finding) -> str | None:
    """A finding's remedy code in this policy's keys (None when it has none): what converts a pod
    that stays legacy, or which setting made a partial translation."""
    subject, stays = finding.remedy_subject, finding.severity >= 3
    match finding.remedy:
        case None:
            return None
        case Remedy.DECLARE_DRA_SCHEDULER:
            return "if it does, declare it: policy draSchedulers"
        case Remedy.HAMI_WHOLE_DEVICES:
            return "policy hamiSlicing: whole-devices gives it whole devices"
        case Remedy.ADD_MIG_PROFILE_CLASS:
            return f"`dra-migrate classes --mig-profile {subject}` renders it"
        case Remedy.INCLUDE_CUSTOM_RESOURCES:
            return "dra-migrate convert --include-custom-resources"
        case Remedy.FAIL_REQUESTS_GREATER_THAN_ONE:
            return "policy failRequestsGreaterThanOne"
        case Remedy.CONVERT_HALF_MIGRATED:
            return "policy convertHalfMigrated: true converts it anyway" if stays else "policy convertHalfMigrated"
        case Remedy.IGNORE_LEGACY_QUOTA:
            return "policy ignoreLegacyQuota: true converts it anyway" if stays else "policy ignoreLegacyQuota"
        case Remedy.ADD_CATALOG_ENTRY:
            return f"add an entry for {subject} to the webhook's user catalog (--catalog)"
        case _:
            assert_never(finding.remedy)


__all__ = [
    "MATCH_KEYS",
    "POLICY_API_VERSION",
    "RULE_KEYS",
    "SYSTEM_NAMESPACES",
    "TOP_LEVEL_KEYS",
    "Match",
    "OnError",
    "Options",
    "Policy",
    "Rule",
    "Subject",
    "load_policy",
    "load_policy_file",
    "parse_policy",
    "policy_remedy",
    "setting_names",
]
