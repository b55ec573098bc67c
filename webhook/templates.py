"""Ensure content-addressed ResourceClaimTemplates exist before a patch refers to them.

    class TemplateEnsurer(Protocol):
        async def ensure(templates, *, dry_run) -> int       # templates created; TemplateError

:class:`KubeTemplateEnsurer` is the real one (over :class:`kube.api.KubeApi`, docs/design.md D2):
- create; AlreadyExists is success when the stored spec equals the wanted one after API
  defaulting (compared through ``translate.plan.claim_templates.internal_from_template``); a different
  spec under the same content-addressed name is an error;
- a template with ``deletionTimestamp`` counts as missing (TemplateError: the pod would
  reference a template about to vanish);
- the whole call has a deadline (default 2 s, well under the webhook's timeoutSeconds);
- every failure to reach or use the API server (deadline, connection refused, TLS or
  protocol error, an API error status) is a TemplateError, so the policy's ``onError``
  decides the answer, never the handler's internal-error path;
- names known to exist are cached for a short time (default 30 s) and dropped at once on a
  watch DELETED event (:meth:`KubeTemplateEnsurer.forget`) or when an API call says NotFound;
- ``dry_run`` creates nothing and calls nothing (``sideEffects: NoneOnDryRun``);
- a template whose namespace is not a DNS label or whose name is not a DNS subdomain is a
  TemplateError before any call (the names go into API paths).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.backoff import Backoff, Sleep
from dra_bridge.kube.errors import AlreadyExists, KubeError, Unavailable
from dra_bridge.kube.resources import RESOURCE_CLAIM_TEMPLATES
from dra_bridge.translate.dns_names import is_dns_label, is_dns_subdomain
from dra_bridge.translate.names import MANAGED_BY
from dra_bridge.translate.plan.claim_templates import internal_from_template
from dra_bridge.webhook.errors import TemplateError

logger = logging.getLogger(__name__)


class TemplateEnsurer(Protocol):
    """Makes templates exist in their namespace (``metadata.namespace`` is always set)."""

    async def ensure(self, templates: Sequence[Mapping[str, Any]], *, dry_run: bool) -> int:
        """Returns how many were created; raises TemplateError when one cannot be ensured."""
        ...


def _unreachable(exc: KubeError) -> bool:
    return isinstance(exc, Unavailable) and exc.status is None


def _same_spec(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    try:
        return internal_from_template(stored) == internal_from_template(wanted)
    except (KeyError, TypeError, ValueError):
        return False


class KubeTemplateEnsurer:
    """The real ensurer over the API server (see the module docstring).

    ``api_version``: ``resource.k8s.io/<version>`` to write; ``deadline``: seconds for one
    ensure call; ``ttl``: seconds a name stays known; ``clock``: monotonic seconds (tests).
    """

    def __init__(
        self,
        api: KubeApi,
        api_version: str,
        *,
        deadline: float = 2.0,
        ttl: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._sleep = sleep
        self._api = api
        self._templates = RESOURCE_CLAIM_TEMPLATES.at(api_version)
        self.version = self._templates.version
        self.deadline = deadline
        self.ttl = ttl
        self._clock = clock
        self._known: dict[tuple[str, str], float] = {}
        self.api_calls = 0

    def forget(self, namespace: str, name: str) -> None:
        """Drop a cached name (a watch saw it deleted, or an API call said NotFound)."""
        self._known.pop((namespace, name), None)

    def known(self, namespace: str, name: str) -> bool:
        """True while the name is cached as existing."""
        expiry = self._known.get((namespace, name))
        if expiry is None:
            return False
        if expiry <= self._clock():
            del self._known[(namespace, name)]
            return False
        return True

    async def ensure(self, templates: Sequence[Mapping[str, Any]], *, dry_run: bool) -> int:
        """See :class:`TemplateEnsurer`."""
        if dry_run:
            return 0
        for tpl in templates:
            meta = tpl.get("metadata") or {}
            ns, name = meta.get("namespace"), meta.get("name")
            if not (isinstance(ns, str) and is_dns_label(ns) and isinstance(name, str) and is_dns_subdomain(name)):
                raise TemplateError(f"{str(ns)[:80]!r}/{str(name)[:80]!r} is not a valid namespace/name: not sent")
        created = 0
        try:
            async with asyncio.timeout(self.deadline):
                for tpl in templates:
                    created += await self._ensure_one(tpl)
        except TimeoutError as exc:
            raise TemplateError(f"no answer from the API server within {self.deadline:g}s") from exc
        except Unavailable as exc:  # refused, TLS, protocol (an answered 5xx names its status below)
            raise TemplateError(f"cannot reach the API server ({exc})") from exc
        return created

    async def _ensure_one(self, tpl: Mapping[str, Any]) -> int:
        ns, name = str(tpl["metadata"]["namespace"]), str(tpl["metadata"]["name"])
        if self.known(ns, name):
            return 0
        body = {**tpl, "apiVersion": self._templates.api_version}
        try:
            self.api_calls += 1
            await self._api.create(self._templates, body, ns)
        except AlreadyExists:
            await self._check_existing(ns, name, tpl)
            self._known[(ns, name)] = self._clock() + self.ttl
            return 0
        except KubeError as exc:
            self.forget(ns, name)
            if _unreachable(exc):
                raise
            raise TemplateError(f"creating {ns}/{name}: HTTP {exc.status} {exc.reason}") from exc
        logger.info("created ResourceClaimTemplate %s/%s", ns, name)
        self._known[(ns, name)] = self._clock() + self.ttl
        return 1

    async def _check_existing(self, ns: str, name: str, tpl: Mapping[str, Any]) -> None:
        try:
            self.api_calls += 1
            stored = await self._api.get(self._templates, name, ns)
        except KubeError as exc:
            self.forget(ns, name)
            if _unreachable(exc):
                raise
            raise TemplateError(f"reading {ns}/{name} after AlreadyExists: HTTP {exc.status} {exc.reason}") from exc
        if stored.get("metadata", {}).get("deletionTimestamp"):
            raise TemplateError(f"{ns}/{name} is being deleted")
        if not _same_spec(stored, tpl):
            raise TemplateError(f"{ns}/{name} exists with a different spec")

    async def watch_deletions(self, stop: asyncio.Event, label_selector: str = "") -> None:
        """Drop cache entries on DELETED (or deletionTimestamp) events until ``stop`` is set.

        Lists/watches templates in every namespace with ``label_selector`` (the webhook uses
        its own managed-by value); reconnects after errors with exponential backoff (1 s
        doubling to 30 s, reset once a watch delivered an event or ended normally).
        """
        selector = label_selector or f"{MANAGED_BY}=dra-bridge-webhook"
        backoff = Backoff(sleep=self._sleep)
        while not stop.is_set():
            try:
                async for event_type, obj in self._api.watch(self._templates, label_selector=selector, timeout=60):
                    backoff.reset()
                    meta = obj.get("metadata") or {}
                    if event_type == "DELETED" or meta.get("deletionTimestamp"):
                        self.forget(str(meta.get("namespace")), str(meta.get("name")))
                    if stop.is_set():
                        break
                backoff.reset()
            except KubeError as exc:
                logger.warning("template watch: %s; retrying in %gs", str(exc) or type(exc).__name__, backoff.delay)
                await backoff.wait()
            finally:
                self._known.clear()  # events may have been missed while disconnected


class NullEnsurer:
    """An ensurer that creates nothing and always succeeds (no API server configured)."""

    async def ensure(self, templates: Sequence[Mapping[str, Any]], *, dry_run: bool) -> int:
        """Succeeds without doing anything."""
        return 0
