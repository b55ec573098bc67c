"""GPU Feature Discovery labels -> guarded CEL selectors over the NVIDIA DRA driver's attributes.

One label requirement (key, operator, values) becomes one selector, or None when the label
has no device meaning (``gpu.count``, ``gpu.machine``, ...: those stay on the pod). The label
formats are GFD's (https://github.com/NVIDIA/k8s-device-plugin/blob/main/internal/lm/resource.go), the
attributes the NVIDIA DRA driver's (docs/design.md D5):

    nvidia.com/gpu.product        productName, compared in normalised form (see
                                  selector_text.normalized_product); ``-SHARED`` and
                                  ``-MIG-<profile>`` suffixes stripped (the latter adds
                                  ``type == "mig"`` and the profile test)
    nvidia.com/gpu.memory         capacity memory: the label is MiB, rounded down
                                  (In v  ->  v Mi <= memory < (v+1) Mi)
    nvidia.com/gpu.family         architecture, lower case with dashes ("ada-lovelace")
    nvidia.com/gpu.compute.*      cudaComputeCapability .major() / .minor()
    nvidia.com/cuda.driver-version.*, cuda.driver.*     driverVersion (semver)
    nvidia.com/cuda.runtime-version.*, cuda.runtime.*   cudaDriverVersion (semver)
    nvidia.com/mig.strategy=single                      type == "mig"

Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt (core/v1 NodeSelectorRequirement). NotIn
and DoesNotExist hold for devices that lack the attribute, as they hold for unlabelled nodes.
Version selectors need the CEL semver library, usable in new selectors from Kubernetes 1.34
(introduced 1.33; k8s.io/apiserver pkg/cel/environment/base.go): on older targets they raise
:class:`Untranslatable`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dra_bridge.translate.cel import selector_text as ex
from dra_bridge.translate.errors import TranslateError
from dra_bridge.translate.names import (
    GFD_COMPUTE_MAJOR_LABEL,
    GFD_COMPUTE_MINOR_LABEL,
    GFD_FAMILY_LABEL,
    GFD_MEMORY_LABEL,
    GFD_MIG_STRATEGY_LABEL,
    GFD_PREFIX,
    GFD_PRODUCT_LABEL,
    NVIDIA_DRIVER,
)

SEMVER_MIN_MINOR = 34
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


class Untranslatable(TranslateError):
    """A GPU label requirement that has device meaning but cannot become a selector here."""


@dataclass(frozen=True)
class Requirement:
    """A node selector requirement: ``key``, ``operator`` and ``values`` (core/v1)."""

    key: str
    operator: str
    values: tuple[str, ...]


_NODE_LEVEL = re.compile(
    re.escape(GFD_PREFIX) + r"(gpu\.(count|machine|replicas|sharing-strategy|mode|clique|present|deploy\..*|slices\..*|"
    r"engines\..*|multiprocessors)|gfd\.timestamp|device-plugin\.config|mps\.capable|mig\.capable|vgpu\..*|"
    r"mig-.*|mig\.config.*)"
)


def is_gpu_label(key: str) -> bool:
    """True for labels in GFD's ``nvidia.com/`` namespace (device-level or node-level)."""
    return key.startswith(GFD_PREFIX)


def _attr(name: str) -> str:
    return ex.attribute(NVIDIA_DRIVER, name)


def _split_product(value: str) -> tuple[str, str | None]:
    """A ``gpu.product`` label value -> (the model, the MIG profile or None); ``-SHARED`` and
    ``-MIG-<profile>`` suffixes stripped (GFD's ``getProductName``)."""
    base = value[: -len("-SHARED")] if value.endswith("-SHARED") else value
    m = re.fullmatch(r"(.*)-MIG-(.+)", base)
    return (m.group(1), m.group(2)) if m else (base, None)


def product_mig_profile(value: str) -> str | None:
    """The MIG profile a ``gpu.product`` value names (``NVIDIA-A100-SXM4-40GB-MIG-1g.5gb`` ->
    ``1g.5gb``, in the device plugin's spelling), or None for a whole GPU: GFD writes the suffix
    on MIG single-strategy nodes, where ``nvidia.com/gpu`` counts MIG devices."""
    return _split_product(value)[1]


def _product_selector(values: Sequence[str], aliases: Callable[[str], tuple[str, ...]]) -> str:
    """One test per value, OR-ed; produced one at a time, so a list longer than the API's
    selector limit stops at the limit (OverLimit)."""
    for value in values:
        if _split_product(value)[1] == "INVALID":
            raise Untranslatable(f"{value!r} marks a node whose MIG configuration is invalid")

    def test(value: str) -> str:
        base, profile = _split_product(value)
        found = ex.product_in(NVIDIA_DRIVER, "productName", [base])
        if profile is None:
            return found
        return ex.all_of(
            [
                found,
                ex.string_attribute_in(NVIDIA_DRIVER, "type", ["mig"]),
                ex.string_attribute_in(NVIDIA_DRIVER, "profile", aliases(profile)),
            ]
        )

    return ex.any_of(test(v) for v in values)


def _int_values(req: Requirement) -> list[int]:
    try:
        return [int(v) for v in req.values]
    except ValueError as exc:
        raise Untranslatable(f"{req.key} {req.operator} {list(req.values)}: values must be integers") from exc


def _memory_selector(req: Requirement) -> str:
    cap = f"{ex.capacity(NVIDIA_DRIVER)}.memory"
    has = ex.has_capacity(NVIDIA_DRIVER, "memory")

    def cmp(mib: int) -> str:
        return f"{cap}.compareTo(quantity({ex.literal(f'{mib}Mi')}))"

    if req.operator in ("In", "NotIn"):
        ranges = ex.any_of(f"({cmp(v)} >= 0 && {cmp(v + 1)} < 0)" for v in _int_values(req))
        test = f"({has} && {ranges})"
        return test if req.operator == "In" else ex.negate(test)
    (value,) = _int_values(req)
    if req.operator == "Gt":
        return f"({has} && {cmp(value + 1)} >= 0)"
    return f"({has} && {cmp(value)} < 0)"


def _semver_text(raw: str) -> str:
    parts = [str(int(p)) for p in raw.split(".")] if re.fullmatch(r"[0-9]+(\.[0-9]+){0,2}", raw) else []
    if not parts:
        raise Untranslatable(f"{raw!r} is not a version")
    return ".".join([*parts, "0", "0"][:3])


def _version_selector(req: Requirement, attr: str, part: str | None) -> str:
    ref = _attr(attr)
    has = f"{ex.has_attribute(NVIDIA_DRIVER, attr)} && {ex.is_version(ref)}"
    if part is None:
        if req.operator in ("Gt", "Lt"):
            raise Untranslatable(f"{req.key} {req.operator}: Gt/Lt need a single integer")
        versions = [_semver_text(v) for v in req.values]
        test = f"({has} && " + ex.any_of(f"{ref}.compareTo(semver({ex.literal(v)})) == 0" for v in versions) + ")"
        return test if req.operator == "In" else ex.negate(test)
    call = f"{ref}.{part}()"
    values = _int_values(req)
    if req.operator == "In":
        return f"({has} && {call} in [{ex.join(map(str, values))}])"
    if req.operator == "NotIn":
        return ex.negate(f"({has} && {call} in [{ex.join(map(str, values))}])")
    op = ">" if req.operator == "Gt" else "<"
    return f"({has} && {call} {op} {values[0]})"


_VERSION_LABELS: dict[str, tuple[str, str | None]] = {}
for _prefix, _attribute in (
    ("cuda.driver-version", "driverVersion"),
    ("cuda.driver", "driverVersion"),
    ("cuda.runtime-version", "cudaDriverVersion"),
    ("cuda.runtime", "cudaDriverVersion"),
):
    for _suffix, _part in (
        ("major", "major"),
        ("minor", "minor"),
        ("revision", "patch"),
        ("rev", "patch"),
        ("full", None),
    ):
        _VERSION_LABELS[f"{GFD_PREFIX}{_prefix}.{_suffix}"] = (_attribute, _part)
_VERSION_LABELS[GFD_COMPUTE_MAJOR_LABEL] = ("cudaComputeCapability", "major")
_VERSION_LABELS[GFD_COMPUTE_MINOR_LABEL] = ("cudaComputeCapability", "minor")


def selector_for(req: Requirement, kubernetes_minor: int, aliases: Callable[[str], tuple[str, ...]]) -> str | None:
    """The selector for one requirement, or None for labels without device meaning.

    Raises Untranslatable for a device label this target cannot express (version selectors
    before 1.34, non-integer Gt/Lt, an invalid MIG product), and OverLimit as soon as the text
    would cross the API server's limits on a selector (docs/design.md D33).
    """
    _check_operator(req)
    key, op = req.key, req.operator
    if _NODE_LEVEL.fullmatch(key) or not is_gpu_label(key):
        return None
    if key == GFD_PRODUCT_LABEL:
        if op in ("Exists", "DoesNotExist"):
            test = ex.has_attribute(NVIDIA_DRIVER, "productName")
            return test if op == "Exists" else ex.negate(test)
        if op in ("Gt", "Lt"):
            raise Untranslatable(f"{key} {op}: product names are not numbers")
        test = _product_selector(req.values, aliases)
        return test if op == "In" else ex.negate(test)
    if key == GFD_MEMORY_LABEL:
        if op in ("Exists", "DoesNotExist"):
            test = ex.has_capacity(NVIDIA_DRIVER, "memory")
            return test if op == "Exists" else ex.negate(test)
        return _memory_selector(req)
    if key == GFD_FAMILY_LABEL:
        if op in ("Gt", "Lt"):
            raise Untranslatable(f"{key} {op}: families are not numbers")
        return _family_selector(req)
    if key == GFD_MIG_STRATEGY_LABEL:
        if op == "In" and list(req.values) == ["single"]:
            return ex.string_attribute_in(NVIDIA_DRIVER, "type", ["mig"])
        return None
    if key in _VERSION_LABELS:
        return _version_label_selector(req, kubernetes_minor)
    return None


def _check_operator(req: Requirement) -> None:
    """Raise Untranslatable for a requirement core/v1 validation rejects."""
    op = req.operator
    if op not in OPERATORS:
        raise Untranslatable(f"unknown operator {op!r}")
    if op in ("In", "NotIn") and not req.values:
        raise Untranslatable(f"{op} needs at least one value (core/v1 validation)")
    if op in ("Gt", "Lt") and len(req.values) != 1:
        raise Untranslatable(f"{op} needs exactly one value (core/v1 validation)")


def _family_selector(req: Requirement) -> str:
    """``nvidia.com/gpu.family`` (not Gt/Lt): the architecture, lower case, spaces as dashes."""
    op = req.operator
    if op in ("Exists", "DoesNotExist"):
        test = ex.has_attribute(NVIDIA_DRIVER, "architecture")
        return test if op == "Exists" else ex.negate(test)
    ref = _attr("architecture")
    names = ex.join(ex.literal(v.lower()) for v in req.values)
    test = (
        f"({ex.has_attribute(NVIDIA_DRIVER, 'architecture')} && type({ref}) in [string] && "
        f'{ref}.lowerAscii().replace(" ", "-") in [{names}])'
    )
    return test if op == "In" else ex.negate(test)


def _version_label_selector(req: Requirement, kubernetes_minor: int) -> str:
    """A driver, CUDA or compute-capability version label (:data:`_VERSION_LABELS`)."""
    key, op = req.key, req.operator
    attr, part = _VERSION_LABELS[key]
    if op in ("Exists", "DoesNotExist"):
        test = ex.has_attribute(NVIDIA_DRIVER, attr)
        return test if op == "Exists" else ex.negate(test)
    if kubernetes_minor < SEMVER_MIN_MINOR:
        raise Untranslatable(
            f"{key} needs the CEL semver library, usable in selectors from Kubernetes 1.{SEMVER_MIN_MINOR} "
            f"(target is 1.{kubernetes_minor})"
        )
    return _version_selector(req, attr, part)
