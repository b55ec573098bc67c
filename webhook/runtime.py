"""The configuration in force: policy, catalog and TLS files, watched and reloaded.

    Runtime(api_version, policy=Watched|None, catalog=Watched|None, tls=TlsReloader|None)
    Runtime.context() -> decision.Context     (rebuilt only when a file changed)
    Runtime.check_files() -> None             (called periodically by the server, in a worker thread)
    Runtime.readiness() -> (ready, detail)    ready = TLS loaded (and matching the CA bundle and the
                                              service name, when given) and, for each policy or
                                              catalog file given, a valid version in force
    Runtime.liveness() -> (alive, why)        False once the reload loop stopped or hangs (webhook.reload)
    Runtime.watch_cluster(view, health)       the detail and metrics also say which views synced,
                                              which permission is missing, whether the API server answers

A refused file keeps the last good value in force (docs/design.md D8, D32); its reason shows in
logs (webhook.reload), in metrics (``dra_webhook_config_valid``) and in the readiness detail,
which stays *ready*: one bad edit must not take every replica out of the Service. A policy or
catalog file that has never loaded (bad at start) has no good version: the webhook serves but is
not ready (the detail names the file and the key), admits every pod unchanged meanwhile (a policy
it cannot read must not be replaced by the built-in defaults) and keeps re-reading the file, so a
rollout with a bad file stalls on readiness instead of crash-looping. The same
holds for the cluster: a view that has not synced, a missing permission or an unreachable
API server show in the detail (``cluster``) and in metrics, never in readiness, because a
webhook out of its Service's endpoints makes the API server apply failurePolicy silently;
a missing view degrades admissions instead (quota unknown: pods stay legacy).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dra_bridge.kube.observed import ApiHealth
from dra_bridge.translate.catalog import Catalog, load_catalog
from dra_bridge.translate.enrolment import EnrolmentSettings
from dra_bridge.translate.errors import CatalogError, PolicyError
from dra_bridge.translate.plan.cluster_state import QuotaKeys
from dra_bridge.translate.plan.options import Options
from dra_bridge.translate.policy import SYSTEM_NAMESPACES, Policy, load_policy
from dra_bridge.webhook.cluster import ClusterView
from dra_bridge.webhook.decision import Context
from dra_bridge.webhook.enrolment_gate import NamespaceLabels
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.metrics import Metrics
from dra_bridge.webhook.patch import PatchMemo
from dra_bridge.webhook.reload import Reloader, Watched, failure_text
from dra_bridge.webhook.tls import TlsReloader

logger = logging.getLogger(__name__)


def parse_catalog(text: str, source: str) -> Catalog:
    """A user catalog file -> Catalog (shipped entries included); WebhookConfigError when invalid."""
    try:
        return load_catalog(text, source)
    except CatalogError as exc:
        raise WebhookConfigError(str(exc)) from exc


def parse_policy_file(text: str, source: str) -> Policy:
    """A policy file -> Policy; WebhookConfigError with translate's PolicyError's message when
    invalid (a refused reload keeps the last good policy; at startup: exit 1)."""
    try:
        return load_policy(text, source)
    except PolicyError as exc:
        raise WebhookConfigError(str(exc)) from exc


def watch_policy(path: Path, *, strict: bool = True) -> Watched[Policy]:
    """A watched policy file (loaded now); WebhookConfigError when the first load fails and
    ``strict`` (``serve`` passes False: it starts unready, see the module docstring)."""
    watched: Watched[Policy] = Watched(path, parse_policy_file)
    if not watched.check() and strict:
        raise WebhookConfigError(f"policy: {watched.error}")
    return watched


def watch_catalog(path: Path, *, strict: bool = True) -> Watched[Catalog]:
    """A watched user catalog (loaded now); WebhookConfigError when the first load fails and ``strict``."""
    watched: Watched[Catalog] = Watched(path, parse_catalog)
    if not watched.check() and strict:
        raise WebhookConfigError(f"catalog: {watched.error}")
    return watched


def _admit_unchanged(source: str) -> Policy:
    """The policy while a policy file has no good version: convert nothing."""
    return Policy(Options(convert=False), source=f"{source}: none in force (every pod admitted unchanged)")


@dataclass
class Runtime:
    """See the module docstring. ``require_tls`` is False only for in-process test servers;
    ``exempt_namespaces``: never converted (kube-system and, from the settings, the webhook's own);
    ``enrolment`` and ``namespace_labels``: the enrolment gate (``decision.Context``)."""

    api_version: str
    metrics: Metrics = field(default_factory=Metrics)
    policy: Watched[Policy] | None = None
    catalog: Watched[Catalog] | None = None
    tls: TlsReloader | None = None
    require_tls: bool = True
    kep5004: Callable[[], Mapping[str, str]] = dict
    node_mode: Callable[[str], str | None] = lambda _name: None
    quota_keys: Callable[[str], QuotaKeys] = lambda _ns: frozenset()
    patches: PatchMemo = field(default_factory=PatchMemo)
    exempt_namespaces: frozenset[str] = SYSTEM_NAMESPACES
    enrolment: EnrolmentSettings | None = None
    namespace_labels: Callable[[str], NamespaceLabels] = lambda _ns: None
    cluster: Callable[[], dict[str, Any]] | None = None
    reloader: Reloader = field(default_factory=Reloader)
    _context: Context | None = None
    _changes: int = 0  # new values loaded so far (written by the reload thread only)
    _built: int = -1  # the count _context was built at

    def __post_init__(self) -> None:
        self.metrics.watch_patch_memo(self.patches)

    def _files(self) -> dict[str, Any]:
        return {"policy": self.policy, "catalog": self.catalog, "tls": self.tls}

    def check_files(self) -> None:
        """Re-read changed files; a new good value replaces the Context in force."""
        for name, watched in self._files().items():
            if watched is None:
                continue
            failures = watched.failures
            try:
                if watched.check():
                    self._changes += 1  # after the new value: context() rebuilds
            except Exception as exc:  # a bug in a check: the file counts as refused, the others go on
                error = f"{name}: check failed: {failure_text(exc)}"
                if error != watched.error:  # one line per new reason, as a refused file
                    watched.failures += 1
                    logger.error("%s", error)
                watched.error = error
            if watched.failures != failures:
                self.metrics.reload_failures.labels(name).inc()
            invalid = watched.error or (watched is self.tls and self.tls.mismatch)
            self.metrics.config_valid.labels(name).set(0 if invalid else 1)

    def context(self) -> Context:
        """The admission Context built from the values in force."""
        changes = self._changes  # read before the values, so a change made meanwhile rebuilds next time
        if self._context is None or self._built != changes:
            policy = Policy() if self.policy is None else self.policy.value
            if policy is None:
                policy = _admit_unchanged(str(self.policy.path if self.policy else ""))
            catalog = self.catalog.value if self.catalog and self.catalog.value else load_catalog()
            self._context = Context(
                catalog,
                policy,
                self.api_version,
                node_mode=self.node_mode,
                quota_keys=self.quota_keys,
                patches=self.patches,
                exempt_namespaces=self.exempt_namespaces,
                enrolment=self.enrolment,
                namespace_labels=self.namespace_labels,
            )
            self._built = changes
        kep = self.kep5004()
        if kep != self._context.kep5004:
            self._context = replace(self._context, kep5004=dict(kep))
        return self._context

    def watch_cluster(self, view: ClusterView, health: ApiHealth) -> None:
        """Show ``view``'s sync state and ``health`` in the readiness detail and in metrics."""
        self.cluster = lambda: {"views": view.status(), **health.detail()}
        self.metrics.watch_cluster(lambda: {kind: kind in view.synced for kind in view.status()}, health)

    def needs_slices(self) -> bool:
        """Whether the policy in force reads ResourceSlices anywhere: its defaults or a rule set
        ``deferToKEP5004`` (the KEP-5004 classes are judged by the devices slices publish)."""
        policy = Policy() if self.policy is None else self.policy.value
        if policy is None:
            return False
        return policy.defaults.defer_to_kep5004 or any(
            bool(dict(rule.overrides).get("defer_to_kep5004")) for rule in policy.rules
        )

    def liveness(self) -> tuple[bool, str]:
        """(alive, why not): the reload loop runs and its checks finish (``Reloader.alive``)."""
        return self.reloader.alive()

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """(ready, detail): ready once TLS is loaded, fits the CA bundle and the service name (when
        given: ``TlsReloader.mismatch``), and a valid policy and catalog are in force (when given)."""
        detail: dict[str, Any] = {"apiVersion": self.api_version}
        tls_ok = not self.tls.mismatch if self.tls is not None else not self.require_tls
        detail["tls"] = ("loaded" if self.tls else "not configured") + (
            f"; newest pair refused: {self.tls.error}" if self.tls and self.tls.error else ""
        )
        if self.tls is not None and self.tls.mismatch:
            detail["tls"] += f"; not ready: {self.tls.mismatch}"
        files_ok = all(w is None or w.value is not None for w in (self.policy, self.catalog))
        for name in ("policy", "catalog"):
            watched = self._files()[name]
            if watched is None:
                detail[name] = "built-in defaults" if name == "policy" else "shipped catalog"
            else:
                state = "in force" if watched.value is not None else "none in force"
                refused = watched.error.removeprefix(f"{watched.path}: ")
                detail[name] = f"{watched.path}: {state}" + (f"; newest file refused: {refused}" if refused else "")
        if self.cluster is not None:
            detail["cluster"] = self.cluster()
        ready = tls_ok and files_ok
        detail["ready"] = ready
        return ready, detail
