"""One admission decision, from a decoded review request (no I/O).

    evaluate(request, mode, context) -> Decision(answer, log, effects)     never raises
    Decision.failed(reason) -> Decision     the templates could not be ensured
    Decision.warned(texts) -> Decision      more warnings in the answer

A Decision keeps apart what goes in the response (:class:`webhook.review.Answer`), what
goes in the log line and metrics (:class:`LogEntry`), and what must happen besides
(:class:`Effects`: the templates to ensure, the audit Event).

Rules (docs/design.md D1, D2, D8, D9, D13):
- ``uid`` is echoed; anything that decodes (a non-Pod, an odd pod) is allowed unchanged with
  a warning, because the API server treats every non-200 as a webhook failure;
- a pod already carrying the conversion annotation plans to itself: re-invocation is a no-op;
- a pod in ``Context.exempt_namespaces`` (kube-system, the webhook's own) or one whose policy
  says ``convert: false`` is admitted as it came, without a warning (outcome ``off``);
- with ``Context.enrolment`` (always, in ``serve``), a pod whose namespace the enrolment rule
  does not enrol for the path being served is admitted unchanged with a warning (outcome
  ``not-enrolled``): no template, no Event (docs/design.md D28, ``webhook/enrolment_gate.py``);
  while the Namespace view cannot tell, the policy's ``onError`` applies (enforce; audit admits
  unchanged), as for a template failure;
- audit mode never patches: the plan goes to ``warnings`` and short ``auditAnnotations``;
- enforce returns a decision whose ``effects.templates`` must exist before the patch may be
  sent; :meth:`Decision.failed` turns it into admit-unchanged or deny (policy ``onError``),
  so a half-patched pod is impossible.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.enrolment import EnrolmentSettings
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.plan.cluster_state import QuotaKeys, held_back
from dra_bridge.translate.plan.pod_plan import plan_pod
from dra_bridge.translate.plan.stay_legacy import CLUSTER_STATE
from dra_bridge.translate.policy import SYSTEM_NAMESPACES, OnError, Policy, Subject, policy_remedy
from dra_bridge.webhook.enrolment_gate import NamespaceLabels, Verdict, gate
from dra_bridge.webhook.events import postable_owner
from dra_bridge.webhook.patch import PatchMemo, diff
from dra_bridge.webhook.review import MAX_AUDIT_CHARS, MAX_WARNING_CHARS, MAX_WARNINGS, AdmissionRequest, Answer, clip

Mode = Literal["enforce", "audit"]


@dataclass(frozen=True)
class Context:
    """What a decision depends on besides the review.

    ``node_mode(name)``: the ``dra-bridge.io/mode`` label of a node (None when unknown);
    ``quota_keys(namespace)``: the resource keys any ResourceQuota there limits (QuotaUnknown
    while the quota view has not synced: such pods stay legacy);
    ``kep5004``: legacy resource name -> DeviceClass serving it via KEP-5004; ``patches``:
    the memo of patches (None: diff every time); ``exempt_namespaces``: namespaces never converted;
    ``enrolment``: the chart's namespaceSelector settings the gate judges by (None: no gate, as
    for in-process tests), over ``namespace_labels`` (the Namespace view).
    """

    catalog: Catalog
    policy: Policy
    api_version: str
    kep5004: Mapping[str, str] = field(default_factory=dict)
    node_mode: Callable[[str], str | None] = lambda _name: None
    quota_keys: Callable[[str], QuotaKeys] = lambda _ns: frozenset()
    patches: PatchMemo | None = None
    exempt_namespaces: frozenset[str] = SYSTEM_NAMESPACES
    enrolment: EnrolmentSettings | None = None
    namespace_labels: Callable[[str], NamespaceLabels] = lambda _ns: None


@dataclass(frozen=True)
class LogEntry:
    """What the admission's log line and metrics say. ``outcome``: patched, unchanged,
    audited, ignored, off, not-enrolled, error-admitted or denied; ``name``: the pod's name, or its
    generateName followed by ``*``; ``translated``: the legacy resources converted;
    ``summary``: the plan in words; ``kept_legacy``: the cluster-state reasons that kept a
    convertible pod legacy (``quota``, ``quota-view``, ``daemonset``: the finding's path;
    ``not-enrolled``, ``namespace-view``: the enrolment gate)."""

    outcome: str
    namespace: str = ""
    name: str = ""
    translated: tuple[str, ...] = ()
    summary: str = ""
    kept_legacy: tuple[str, ...] = ()


@dataclass(frozen=True)
class AuditEvent:
    """An Event to post on the pod's controller (audit mode): where, on what, and its message."""

    namespace: str
    owner: Mapping[str, Any]
    message: str


@dataclass(frozen=True)
class Effects:
    """What must happen besides the answer: ``templates`` to ensure before the patch may be
    sent (``dry_run``: ensure nothing for real), what the answer becomes when they cannot be
    (``on_error``, from the policy), and an audit ``event`` to post."""

    templates: tuple[dict[str, Any], ...] = ()
    dry_run: bool = False
    on_error: OnError = "admit-unchanged"
    event: AuditEvent | None = None


@dataclass(frozen=True)
class Decision:
    """One answer, its log entry and its side effects."""

    answer: Answer
    log: LogEntry
    effects: Effects = Effects()

    def failed(self, reason: str) -> Decision:
        """The decision once its templates could not be ensured: deny, or admit unchanged."""
        if self.effects.on_error == "deny":
            msg = f"dra-bridge: cannot ensure ResourceClaimTemplate: {reason} (policy onError: deny)"
            return replace(
                self,
                answer=replace(self.answer, allowed=False, patch=(), status=(403, msg[:1000]), audit={}),
                log=replace(self.log, outcome="denied"),
            )
        warn = clip(f"dra-bridge: left on the device plugin, the ResourceClaimTemplate could not be ensured: {reason}")
        audit = {"not-applied": clip(f"{self.log.summary} (template not ensured: {reason})", MAX_AUDIT_CHARS)}
        answer = replace(self.answer, patch=(), warnings=(*self.answer.warnings, warn)[-MAX_WARNINGS:], audit=audit)
        return replace(self, answer=answer, log=replace(self.log, outcome="error-admitted"))

    def warned(self, texts: tuple[str, ...] | list[str]) -> Decision:
        """The decision with more warnings (clipped, at most MAX_WARNINGS)."""
        warnings = (*self.answer.warnings, *(clip(w) for w in texts))[:MAX_WARNINGS]
        return replace(self, answer=replace(self.answer, warnings=warnings))


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _controller(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def _warning(f: Finding) -> str:
    """``dra-bridge: <path>: <outcome>: <reason>`` in at most MAX_WARNING_CHARS: a long path is
    shortened in its middle first, so the reason and its advice stay whole; a pod-level
    finding (path ".") names no path."""
    tail = f"{f.outcome}: {f.phrased(policy_remedy(f)).reason}"
    if f.path in ("", "."):
        return clip(f"dra-bridge: {tail}")
    path, room = f.path, MAX_WARNING_CHARS - len("dra-bridge: : ") - len(tail)
    if len(path) > room:
        keep = max(room, 24) - 3
        path = path[: keep // 2] + "..." + path[len(path) - (keep - keep // 2) :]
    return clip(f"dra-bridge: {path}: {tail}")


def _not_enrolled(uid: str, namespace: str, name: str, mode: Mode, verdict: Verdict, on_error: OnError) -> Decision:
    """The answer for a namespace the gate refuses: unchanged with a warning; while the view cannot
    tell, ``onError`` (enforce only: audit never refuses a pod)."""
    if verdict.known:
        warning = clip(f"dra-bridge: {verdict.reason}: left unchanged")
        return Decision(
            Answer(uid, warnings=(warning,)), LogEntry("not-enrolled", namespace, name, kept_legacy=("not-enrolled",))
        )
    log = LogEntry("error-admitted", namespace, name, kept_legacy=("namespace-view",))
    if mode == "enforce" and on_error == "deny":
        msg = f"dra-bridge: cannot tell whether namespace {namespace} is enrolled: {verdict.reason}"
        msg += " (policy onError: deny)"
        return Decision(Answer(uid, allowed=False, status=(403, msg[:1000])), replace(log, outcome="denied"))
    warning = clip(
        f"dra-bridge: left on the device plugin, cannot tell whether the namespace is enrolled: {verdict.reason}"
    )
    return Decision(Answer(uid, warnings=(warning,)), log)


def _ignored(uid: str, namespace: str, name: str, *warnings: str) -> Decision:
    return Decision(Answer(uid, warnings=warnings), LogEntry("ignored", namespace, name))


def evaluate(request: AdmissionRequest, mode: Mode, ctx: Context) -> Decision:
    """Decide on one decoded review request (see the module docstring). Never raises."""
    uid = str(request["uid"])
    obj = request.get("object")
    namespace = _str(request.get("namespace"))
    kind = _dict(request.get("kind"))
    if kind.get("kind") != "Pod" or kind.get("group", "") != "" or request.get("subResource"):
        return _ignored(
            uid,
            namespace,
            _str(request.get("name")),
            f"dra-bridge: not a Pod ({clip(str(kind.get('kind')), 60)}): left unchanged",
        )
    if request.get("operation") != "CREATE":
        return _ignored(uid, namespace, _str(request.get("name")))
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
        return _ignored(uid, namespace, "", "dra-bridge: the review carries no pod object: left unchanged")
    meta = _dict(obj.get("metadata"))
    spec = _dict(obj.get("spec"))
    name = _str(meta.get("name")) or (_str(meta.get("generateName")) + "*" if meta.get("generateName") else "")
    name = name or _str(request.get("name"))
    owner = _controller(meta)
    labels = {str(k): str(v) for k, v in _dict(meta.get("labels")).items()}
    subject = Subject(namespace, labels, _str(owner.get("kind")) if owner else "", _str(spec.get("schedulerName")))
    event_owner = postable_owner(owner)  # Events only about what can own a pod, as the review names it
    settings = ctx.policy.settings_for(subject)
    if namespace in ctx.exempt_namespaces or not settings.convert:
        return Decision(Answer(uid), LogEntry("off", namespace, name))
    if ctx.enrolment is not None:
        verdict = gate(namespace, mode, ctx.namespace_labels(namespace), ctx.enrolment, labels)
        if not verdict.enrolled:
            return _not_enrolled(uid, namespace, name, mode, verdict, settings.on_error)
    dry_run = request.get("dryRun") is True
    log = LogEntry("unchanged", namespace, name)
    try:
        plan = plan_pod(obj, ctx.catalog, settings.plan_options(ctx.api_version, ctx.kep5004), namespace or None)
    except Exception as exc:  # plan_pod promises not to raise; an odd pod must still be admitted
        return Decision(
            Answer(
                uid,
                warnings=(clip(f"dra-bridge: could not read the pod ({type(exc).__name__}: {exc}): left unchanged"),),
            ),
            log,
        )
    findings = list(plan.findings)
    if plan.changed:
        findings += held_back(
            plan.record,
            spec,
            subject.owner_kind,
            ctx.node_mode,
            ctx.quota_keys(subject.namespace),
            ctx.catalog,
            settings.ignore_legacy_quota,
        )
    warnings = tuple(_warning(f) for f in findings if f.severity >= 2)[:MAX_WARNINGS]
    held = [f for f in findings if f.outcome == "kept-legacy" and f.code in CLUSTER_STATE]
    if held:  # cluster state keeps a convertible pod legacy: say so in the audit log and metrics too
        reasons = "; ".join(f"{f.path} {f.reason}" for f in held)
        audit = {"kept-legacy": clip(reasons, MAX_AUDIT_CHARS)}
        # audit mode: the owner's Event too (a controller's pod warnings reach nobody)
        event = (
            None
            if mode != "audit" or not event_owner or dry_run
            else AuditEvent(namespace, event_owner, clip(f"dra-bridge audit: pod {name} stays legacy: {reasons}", 1000))
        )
        return Decision(
            Answer(uid, warnings=warnings, audit=audit),
            replace(log, kept_legacy=tuple(f.path.strip("()") for f in held)),
            Effects(dry_run=dry_run, on_error=settings.on_error, event=event),
        )
    if not plan.changed:
        return Decision(Answer(uid, warnings=warnings), log)
    translated = tuple(sorted(plan.converted))
    templates = tuple(str(t["metadata"]["name"]) for t in plan.templates)
    summary = clip(
        f"convert {', '.join(translated)} to claims from ResourceClaimTemplate {', '.join(templates)}"
        if templates
        else f"drop the zero-count requests of {', '.join(translated)}",
        MAX_AUDIT_CHARS,
    )
    if mode == "audit":
        warnings = (f"dra-bridge (audit): would {summary}", *warnings)[:MAX_WARNINGS]
        event = (
            None
            if not event_owner or dry_run
            else AuditEvent(
                namespace,
                event_owner,
                f"dra-bridge audit: pod {name} would {summary}; " + "; ".join(warnings[1:])[:600],
            )
        )
        return Decision(
            Answer(uid, warnings=warnings, audit={"plan": summary}),
            replace(log, outcome="audited", translated=translated, summary=summary),
            Effects(dry_run=dry_run, on_error=settings.on_error, event=event),
        )
    return Decision(
        Answer(uid, patch=diff(obj, plan.pod, ctx.patches), warnings=warnings, audit={"plan": summary}),
        replace(log, outcome="patched", translated=translated, summary=summary),
        Effects(plan.templates, dry_run, settings.on_error),
    )
