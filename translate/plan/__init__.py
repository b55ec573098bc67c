"""The pod plan (docs/design.md D1): a pod or workload -> claim templates, migrated pod, findings.

Owns: the one options model (every setting with its policy key, flag and record key:
:mod:`~translate.plan.options`; what one setting is called where: :mod:`~translate.plan.option_spec`),
the field types a plan needs (:mod:`~translate.plan.field_types`), legacy demand per
container (:mod:`~translate.plan.demand`, counts in :mod:`~translate.plan.device_counts`),
request splitting (:mod:`~translate.plan.request_layout`), GPU placement and HAMi annotations as
device selectors (:mod:`~translate.plan.placement`, :mod:`~translate.plan.gfd_selectors`; the MIG
single strategy, :mod:`~translate.plan.mig_single`), shared GPUs (time-slicing and MPS replicas,
:mod:`~translate.plan.sharing`), topology alignment as claim constraints
(:mod:`~translate.plan.alignment`),
ResourceClaimTemplate rendering (:mod:`~translate.plan.claim_templates`) within the API server's
limits (:mod:`~translate.plan.api_limits`), the plan itself
(:mod:`~translate.plan.pod_plan`; its requests, claims and templates, laid out once per workload
shape: :mod:`~translate.plan.claim_plan`; the rewrite of the pod: :mod:`~translate.plan.pod_rewrite`),
the conversion record it leaves on the pod (written, read, reverted: :mod:`~translate.plan.record`),
workloads (:mod:`~translate.plan.workloads`; the
shapes of custom resources without pod templates, KServe and Argo:
:mod:`~translate.plan.custom_resources`; Ray's GPU count pinned in a converted Ray node group:
:mod:`~translate.plan.ray_params`),
ResourceQuota (:mod:`~translate.plan.quota`), the rules that depend on cluster state
(:mod:`~translate.plan.cluster_state`), and every rule that keeps a pod on the device plugin
(:mod:`~translate.plan.stay_legacy`; for devices and pods that are not ours, accelerator
resources outside the catalog and pods another GPU controller owns: :mod:`~translate.plan.foreign`).
"""

from dra_bridge.translate.plan.claim_templates import internal_from_template, render_template
from dra_bridge.translate.plan.cluster_state import (
    QuotaKeys,
    QuotaUnknown,
    converted_resources,
    daemonset_node,
    held_back,
)
from dra_bridge.translate.plan.options import Options
from dra_bridge.translate.plan.pod_plan import Plan, plan_pod
from dra_bridge.translate.plan.record import ConversionRecord, RecordedOptions
from dra_bridge.translate.plan.workloads import Converted, convert_object

__all__ = [
    "ConversionRecord",
    "Converted",
    "Options",
    "Plan",
    "QuotaKeys",
    "QuotaUnknown",
    "RecordedOptions",
    "convert_object",
    "converted_resources",
    "daemonset_node",
    "held_back",
    "internal_from_template",
    "plan_pod",
    "render_template",
]
