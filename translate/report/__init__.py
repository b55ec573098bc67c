"""The migration report (``dra-migrate report``): pure rules, no I/O.

Owns: which workloads the input holds and the pods each owns (:mod:`~translate.report.grouping`),
the path each can take, KEP-5004 included (:mod:`~translate.report.paths`), the namespaces
whose enrolment it is judged in (:mod:`~translate.report.namespaces`), what the cluster serves
(``resource.k8s.io`` versions, the DRA gates that decide paths: :mod:`~translate.report.served`),
the plan options the
webhook's policy gives each workload (:mod:`~translate.report.policy_options`), the custom
resources a live report lists (:mod:`~translate.report.custom_kinds`), the risks the translation
alone cannot see (:mod:`~translate.report.risks`; those of the software around a workload, Kueue,
pod-resources readers, KubeRay, KServe: :mod:`~translate.report.integrations`), which workloads
a live report lists (:mod:`~translate.report.listing`), the workload fields it cannot read
(a finding each) and the malformed ResourceQuotas it refuses (:mod:`~translate.report.malformed`),
the ResourceQuotas on legacy devices it
lists (:mod:`~translate.report.quotas`), the pods each workload creates
(:mod:`~translate.report.pod_total`), the capacity check over the report's workloads
(:mod:`~translate.report.capacity`), and the report itself: built by
:mod:`~translate.report.build`, its data and JSON document in :mod:`~translate.report.model`
(schema: ``translate/data/report-v2.schema.json``).
The renderers and the command live in ``migrate/``.
"""

from dra_bridge.translate.report.build import build_report
from dra_bridge.translate.report.model import (
    DEFAULT_POOL_LABEL,
    FAIL_LEVELS,
    OUTCOMES,
    REPORT_API_VERSION,
    PoolReport,
    Report,
    Settings,
    WorkloadReport,
    attach_capacity,
)
from dra_bridge.translate.report.paths import PATHS

__all__ = [
    "DEFAULT_POOL_LABEL",
    "FAIL_LEVELS",
    "OUTCOMES",
    "PATHS",
    "REPORT_API_VERSION",
    "PoolReport",
    "Report",
    "Settings",
    "WorkloadReport",
    "attach_capacity",
    "build_report",
]
