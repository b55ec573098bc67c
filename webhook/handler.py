"""The admission pipeline around :mod:`webhook.decision`: ensure, measure, log, answer.

    Admitter.handle(body: bytes, mode) -> (http_status, json_body)

- a ReviewError gives HTTP 400/413 with ``{"error": message}`` (docs/design.md D13);
- enforce with a patch first ensures the templates (skipped for dryRun); a TemplateError
  turns the decision into admit-unchanged or deny, per policy ``onError`` (docs/design.md D9);
- any unexpected exception is answered HTTP 200, allowed unchanged, with a warning: the API
  server treats a non-200 as a failed call, which ``failurePolicy: Fail`` turns into a refusal;
- one INFO line per admission: uid, namespace, name (or generateName*), mode, outcome,
  resources translated, duration in ms.

No review blocks the others (docs/design.md D33): decoding and deciding, the CPU-bound part of
an admission, run in worker threads, never on the event loop, which goes on answering other
reviews and the probes meanwhile; the plan itself bounds the work of one review (translate's
limits). Two pools of :data:`REVIEW_WORKERS` threads each: one for ordinary reviews (at most
:data:`ORDINARY_VALUES` JSON values), one for larger ones, so an ordinary review never waits
behind a maximal one, and at most two large reviews are held decoded at once. The Context is
taken on the event loop (the watch-fed views are filled there), and only the ensuring of
templates, the Event and the answer stay on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from dra_bridge.webhook.decision import Context, Decision, LogEntry, Mode, evaluate
from dra_bridge.webhook.errors import ReviewError, TemplateError
from dra_bridge.webhook.events import AuditSink
from dra_bridge.webhook.metrics import Metrics
from dra_bridge.webhook.review import AdmissionReview, Answer, clip, decode_review, json_values
from dra_bridge.webhook.templates import TemplateEnsurer

logger = logging.getLogger(__name__)

#: Characters of a caller's pod name (a DNS subdomain is at most 253) and of an error written in a log line.
MAX_LOGGED_NAME_CHARS = 253
MAX_LOGGED_ERROR_CHARS = 1000

#: Threads per pool that decode and decide reviews. CPU-bound Python shares one core (the GIL),
#: so more threads add no speed: two per pool let reviews be decided side by side, and bound how
#: many large reviews are held decoded at once and how many threads contend with the event loop
#: for the GIL (a process pool's workers would count against the same pod memory limit, each with
#: a copy of the catalog and policy).
REVIEW_WORKERS = 2
#: A review of at most this many JSON values (``review.json_values``; an ordinary pod's holds
#: about 130) and :data:`ORDINARY_BODY_BYTES` is decided in the ordinary pool, any other in the
#: large one.
ORDINARY_VALUES = 400
ORDINARY_BODY_BYTES = 64 * 1024
#: The pools, one each for the process (threads start on first use; one per Admitter would leave
#: idle threads behind every Admitter a test builds).
_ORDINARY = ThreadPoolExecutor(max_workers=REVIEW_WORKERS, thread_name_prefix="dra-webhook-review")
_LARGE = ThreadPoolExecutor(max_workers=REVIEW_WORKERS, thread_name_prefix="dra-webhook-large-review")


class Admitter:
    """Answers AdmissionReviews. ``context()`` returns the Context in force (policy and
    catalog may be reloaded between calls); ``audit`` receives audit plans (optional)."""

    def __init__(
        self, context: Callable[[], Context], ensurer: TemplateEnsurer, metrics: Metrics, audit: AuditSink | None = None
    ) -> None:
        self._context = context
        self._ensurer = ensurer
        self.metrics = metrics
        self._audit = audit

    async def handle(self, body: bytes, mode: Mode) -> tuple[int, AdmissionReview | dict[str, str]]:
        """The HTTP status and JSON body answering ``body`` on the ``mode`` path."""
        start = time.perf_counter()
        try:
            context: Context | Exception = self._context()
        except Exception as failure:  # answered as an internal error once the review decodes
            context = failure
        ordinary = len(body) <= ORDINARY_BODY_BYTES and json_values(body) <= ORDINARY_VALUES
        pool = _ORDINARY if ordinary else _LARGE
        decided = await asyncio.get_running_loop().run_in_executor(pool, _decode_and_decide, body, mode, context)
        if isinstance(decided, ReviewError):
            self.metrics.errors.labels("bad-request").inc()
            self.metrics.requests.labels(mode, "bad-request").inc()
            logger.info("admission rejected mode=%s status=%d error=%s", mode, decided.status, decided)
            return decided.status, {"error": str(decided)}
        uid, evaluated = decided
        try:
            if isinstance(evaluated, Exception):
                raise evaluated
            decision = await self._effects(evaluated)
        except Exception as exc:  # never a 5xx: admit unchanged and say why
            logger.exception("admission uid=%s: internal error", uid)
            self.metrics.errors.labels("internal").inc()
            decision = Decision(
                Answer(
                    uid,
                    warnings=(f"dra-bridge: internal error ({type(exc).__name__}): left unchanged",),
                ),
                LogEntry("error-admitted"),
            )
        elapsed = time.perf_counter() - start
        log = decision.log
        self.metrics.requests.labels(mode, log.outcome).inc()
        for reason in log.kept_legacy:
            self.metrics.kept_legacy.labels(mode, reason).inc()
        self.metrics.latency.labels(mode).observe(elapsed)
        logger.info(
            "admission uid=%s namespace=%s name=%s mode=%s outcome=%s translated=%s duration_ms=%.2f",
            decision.answer.uid,
            log.namespace or "-",
            clip(log.name, MAX_LOGGED_NAME_CHARS) or "-",
            mode,
            log.outcome,
            ",".join(log.translated) or "-",
            elapsed * 1000,
        )
        return 200, decision.answer.review()

    async def _effects(self, decision: Decision) -> Decision:
        """The decision once its effects happened: the audit Event posted, templates ensured."""
        effects = decision.effects
        if effects.event is not None and self._audit is not None:
            self._audit.emit(effects.event.namespace, effects.event.owner, effects.event.message)
        if decision.log.outcome != "patched" or not effects.templates:
            return decision
        try:
            created = await self._ensurer.ensure(effects.templates, dry_run=effects.dry_run)
        except TemplateError as exc:
            self.metrics.errors.labels("template").inc()
            logger.warning("admission uid=%s: %s", decision.answer.uid, clip(str(exc), MAX_LOGGED_ERROR_CHARS))
            return decision.failed(str(exc))
        if created:
            self.metrics.templates_created.inc(created)
        if effects.dry_run:
            return decision.warned(["dra-bridge: dry run: the ResourceClaimTemplate was not created"])
        return decision


def _decode_and_decide(
    body: bytes, mode: Mode, context: Context | Exception
) -> ReviewError | tuple[str, Decision | Exception]:
    """Decode ``body`` and decide (in a worker thread): the ReviewError that answers it, or the
    request's uid with its decision (or the exception that stopped it, raised again on the loop).
    The decoded review is dropped here, so a large one is also freed off the loop."""
    try:
        request = decode_review(body)
    except ReviewError as exc:
        return exc
    uid = str(request["uid"])
    if isinstance(context, Exception):
        return uid, context
    try:
        return uid, evaluate(request, mode, context)
    except Exception as exc:
        return uid, exc
