"""The pod plan (design decision 1): a pod or workload -> claim templates, migrated pod, findings.

Owns: the field types a plan needs (:mod:`~translate.plan.field_types`), legacy demand per
container (:mod:`~translate.plan.demand`, counts in :mod:`~translate.plan.device_counts`),
request splitting (:mod:`~translate.plan.request_layout`), GPU placement and HAMi annotations as
device selectors (:mod:`~translate.plan.placement`, :mod:`~translate.plan.gfd_selectors`),
ResourceClaimTemplate rendering (:mod:`~translate.plan.claim_templates`), the plan itself
(:mod:`~translate.plan.pod_plan`), workloads (:mod:`~translate.plan.workloads`) and the rules that
depend on cluster state (:mod:`~translate.plan.cluster_state`).
"""
