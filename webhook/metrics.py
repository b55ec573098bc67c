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
    dra_webhook_kept_legacy_total{mode, reason}        convertible pods kept legacy by cluster state:
                                                       quota, quota-view (quota not known), daemonset;
                                                       by path (mode): audit counts what enforce would
    dra_webhook_view_synced{view}                      1 once a watch-fed cache (Node, ResourceQuota,
                                                       DeviceClass, ResourceSlice) has listed
    dra_webhook_permission_missing{permission}         1 while RBAC refuses a call (``list core/pods``)
    dra_webhook_api_server_up                          1 when the latest call got an answer, 0 when the
                                                       API server could not be reached (absent before any)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from dra_bridge.kube.observed import ApiHealth

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0)
"""Up to 30 s, the longest ``timeoutSeconds`` a registration takes: the latency alert compares
the quantile with the chart's timeout, and above the last bucket the quantile cannot tell."""


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


class _ClusterCollector(Collector):
    """Reads the views' sync state and the API health at scrape time."""

    def __init__(self, views: Callable[[], Mapping[str, bool]], health: ApiHealth) -> None:
        self.views, self.health = views, health

    def collect(self) -> Iterator[GaugeMetricFamily]:
        synced = GaugeMetricFamily("dra_webhook_view_synced", "1 once the watch-fed cache has listed", labels=["view"])
        for view, ok in sorted(self.views().items()):
            synced.add_metric([view], 1 if ok else 0)
        yield synced
        missing = GaugeMetricFamily(
            "dra_webhook_permission_missing", "1 while RBAC refuses the call", labels=["permission"]
        )
        for call in self.health.missing():
            missing.add_metric([str(call)], 1)
        yield missing
        if self.health.reachable is not None:
            yield GaugeMetricFamily(
                "dra_webhook_api_server_up",
                "1 when the latest call got an answer",
                value=1 if self.health.reachable else 0,
            )


class Metrics:
    """The webhook's metrics; ``render()`` gives the text exposition format."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("dra_webhook_requests", "Admissions answered", ["mode", "outcome"], registry=r)
        self.latency = Histogram(
            "dra_webhook_request_seconds", "Admission handler latency", ["mode"], buckets=BUCKETS, registry=r
        )
        self.templates_created = Counter("dra_webhook_templates_created", "ResourceClaimTemplates created", registry=r)
        self.errors = Counter("dra_webhook_errors", "Errors by kind", ["kind"], registry=r)
        self.audit_events = Counter("dra_webhook_audit_events", "Events emitted on owners in audit mode", registry=r)
        self.reload_failures = Counter(
            "dra_webhook_config_reload_failures", "Refused configuration files", ["file"], registry=r
        )
        self.kept_legacy = Counter(
            "dra_webhook_kept_legacy", "Convertible pods kept legacy by cluster state", ["mode", "reason"], registry=r
        )
        self.config_valid = Gauge(
            "dra_webhook_config_valid", "1 when the newest file is in force", ["file"], registry=r
        )

    def watch_patch_memo(self, memo: _Lookups) -> None:
        """Export ``memo``'s lookups as ``dra_webhook_patch_memo_total{result}``."""
        self.registry.register(_MemoCollector(memo))

    def watch_cluster(self, views: Callable[[], Mapping[str, bool]], health: ApiHealth) -> None:
        """Export the views' sync state and ``health`` (see the module docstring)."""
        self.registry.register(_ClusterCollector(views, health))

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)
