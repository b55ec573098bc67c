"""Prometheus metrics of one webhook process (a registry per instance, so tests stay isolated).

Names and labels:
    dra_webhook_requests_total{mode, outcome}          admissions answered (outcome as in Decision)
    dra_webhook_request_seconds{mode}                  handler latency histogram (seconds)
    dra_webhook_templates_created_total                ResourceClaimTemplates created
    dra_webhook_errors_total{kind}                     bad-request, template, event, internal
    dra_webhook_audit_events_total                     Events emitted on owners in audit mode
    dra_webhook_config_reload_failures_total{file}     refused policy/catalog/TLS files
    dra_webhook_config_valid{file}                     1 when the newest file is in force
    dra_webhook_patch_memo_total{result}               patch memo lookups: hit (a workload seen
                                                       before) or miss (diffed by jsonpatch)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class _Lookups(Protocol):
    hits: int
    misses: int


class _MemoCollector(Collector):
    """Reads a memo's hit and miss counts at scrape time."""

    def __init__(self, memo: _Lookups) -> None:
        self.memo = memo

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily("dra_webhook_patch_memo", "Patch memo lookups", labels=["result"])
        family.add_metric(["hit"], self.memo.hits)
        family.add_metric(["miss"], self.memo.misses)
        yield family


class Metrics:
    """The webhook's metrics; ``render()`` gives the text exposition format."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("dra_webhook_requests", "Admissions answered", ["mode", "outcome"], registry=r)
        self.latency = Histogram("dra_webhook_request_seconds", "Admission handler latency", ["mode"],
                                 buckets=BUCKETS, registry=r)
        self.templates_created = Counter("dra_webhook_templates_created", "ResourceClaimTemplates created",
                                         registry=r)
        self.errors = Counter("dra_webhook_errors", "Errors by kind", ["kind"], registry=r)
        self.audit_events = Counter("dra_webhook_audit_events", "Events emitted on owners in audit mode",
                                    registry=r)
        self.reload_failures = Counter("dra_webhook_config_reload_failures", "Refused configuration files",
                                       ["file"], registry=r)
        self.config_valid = Gauge("dra_webhook_config_valid", "1 when the newest file is in force", ["file"],
                                  registry=r)

    def watch_patch_memo(self, memo: _Lookups) -> None:
        """Export ``memo``'s lookups as ``dra_webhook_patch_memo_total{result}``."""
        self.registry.register(_MemoCollector(memo))

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)
