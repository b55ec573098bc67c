"""The migration rules: pure functions from legacy device requests to DRA objects.

No I/O, no asyncio, no Kubernetes client: plain dicts in, new dicts out, deterministic
(docs/design.md D23). By concern:

    translate.plan           the pod plan: a pod or workload -> claim templates, migrated pod, findings
                             (demand, request splitting, GPU placement and GFD selectors, sharing, MIG,
                             topology alignment, claim template rendering, workloads, quota, and every
                             rule that keeps a pod legacy)
    translate.inventory      a node's device-plugin inventory -> the ResourceSlices of its pool
    translate.cel            the DRA CEL environment (compile and evaluate selectors) and the text of
                             the guarded selectors the migration writes
    translate.alloc          the allocation engine: which devices the scheduler would allocate
    translate.capacity       the capacity check: do converted workloads fit the cluster's devices
    translate.report         the migration report's rules (paths, risks, the JSON document)
    translate.policy         the webhook's policy file: modes and rules per scope, parsed and matched
    translate.cdi            what the bridge's DRA plugin answers for a claim, and its CDI specs
    translate.edit_sources   where a device's container edits come from (docs/design.md D10)
    translate.catalog_edits  a catalog entry's ``edits`` block
    translate.catalog_file   a catalog file's schema: every key type-checked, naming file and key
    translate.allocate_edits the part of a device plugin's Allocate answers that composes under DRA
    translate.edit_escape    container edits that would let a container escape; plain names
    translate.cdi_rules      the CDI specification's rules for a spec file
    translate.names          every well-known label, annotation, domain, driver name and API version
    translate.catalog        the translation catalog (legacy resource -> DeviceClass), as data
    translate.enrolment      which webhook paths see a namespace's pods (the chart's namespaceSelectors)
    translate.label_selector a label selector (matchLabels, matchExpressions) and what it selects
    translate.findings       findings, their outcomes and severities, and remedy codes
    translate.errors         the exception tree
    translate.dns_names      DNS name rules and stable hashes for derived names
    translate.json_copy      copies of JSON-like values
    translate.strict_yaml    YAML as Kubernetes tools read it (duplicate keys refused)
    translate.fast_yaml      PyYAML's safe load and dump with plain values built inline (same results)

This package exports the vocabulary every front end shares; each subpackage exports its own
public surface.
"""

from dra_bridge.translate.catalog import Catalog, ResourceMapping, load_catalog
from dra_bridge.translate.errors import (
    ApiVersionError,
    CatalogError,
    CountError,
    InputError,
    InventoryError,
    RecordError,
    SelectorError,
    TranslateError,
    ValueFormatError,
)
from dra_bridge.translate.findings import SEVERITY, Finding, Outcome, Remedy

__all__ = [
    "SEVERITY",
    "ApiVersionError",
    "Catalog",
    "CatalogError",
    "CountError",
    "Finding",
    "InputError",
    "InventoryError",
    "Outcome",
    "RecordError",
    "Remedy",
    "ResourceMapping",
    "SelectorError",
    "TranslateError",
    "ValueFormatError",
    "load_catalog",
]
