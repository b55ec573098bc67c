"""MIG single strategy: ``nvidia.com/gpu`` on a node where it counts MIG devices (NVIDIA/k8s-device-plugin).

With the device plugin's single strategy every MIG device of a node is one ``nvidia.com/gpu``,
and GFD labels the node ``nvidia.com/gpu.product=<model>-MIG-<profile>`` (and
``nvidia.com/mig.strategy=single``). A pod that selects such nodes asks for MIG devices of that
profile, so its requests go to the profile's MIG class (``nvidia-mig-<profile>.dra-bridge.io``,
or ``mig.nvidia.com`` with the profile test on the vendor target), never to the whole-GPU class:
a whole-GPU request plus a ``type == "mig"`` selector allocates nothing on the vendor driver.

    serve(demand mapping, placement, catalog) -> (mapping to use, findings)

- one profile among the translated product values: that profile's MIG class;
- several profiles, or MIG and whole-GPU products together: no one class serves them
  (``unsupported``);
- ``mig.strategy=single`` without a profile: the vendor target takes the vendor's MIG class
  (any profile); the bridge target keeps the whole-GPU class, ``partial`` (it allocates on the
  bridge, whose devices of ``nvidia.com/gpu`` there are MIG devices, never on the vendor driver).

Applies to whole-device resources whose catalog entry has a MIG sibling of the same vendor
driver, and on the vendor target to shared ones (a shared replica becomes one whole device
there, a MIG device on these nodes).
"""

from __future__ import annotations

from dataclasses import replace

from dra_bridge.translate.catalog import Catalog, ResourceMapping
from dra_bridge.translate.cel import selector_text as ex
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.names import GFD_PRODUCT_LABEL
from dra_bridge.translate.plan.placement import Placement


def mig_mapping(catalog: Catalog, whole: ResourceMapping, profile: str | None) -> ResourceMapping | None:
    """The mapping serving ``whole`` on a single-strategy node: the MIG entry of the same vendor
    driver for ``profile`` (the device plugin's spelling, ``1g.10gb.me``), keeping ``whole``'s
    resource name; for ``profile`` None the vendor's MIG class without a profile test (vendor
    target only). None where nothing fits: no vendor, no MIG entry, a profile that is not one,
    or no profile on the bridge target."""
    if whole.vendor is None:
        return None
    for entry in catalog.entries:
        if (
            entry.kind != "mig"
            or entry.pattern is None
            or entry.vendor is None
            or (entry.vendor.driver != whole.vendor.driver)
        ):
            continue
        if profile is not None:
            found = catalog.lookup(entry.pattern.replace("{profile}", profile))
            return None if found is None else replace(found, resource_name=whole.resource_name)
        if catalog.target != "vendor":
            return None
        tests = [ex.string_attribute_in(entry.vendor.driver, k, [v]) for k, v in entry.vendor.match]
        return replace(
            whole,
            kind="mig",
            device_class=entry.vendor.device_class,
            selectors=(ex.all_of(tests),),
            vendor=entry.vendor,
            gfd=entry.gfd,
        )
    return None


def serve(
    mapping: ResourceMapping, placement: Placement, catalog: Catalog, path: str, legacy: str
) -> tuple[ResourceMapping, list[Finding]]:
    """The mapping to request ``mapping``'s devices with under ``placement``, and findings
    (``unsupported`` keeps the pod legacy; see the module docstring)."""
    applies = mapping.gfd is not None and (
        mapping.kind == "gpu" or (mapping.kind == "shared" and catalog.target == "vendor")
    )
    if not applies or not (placement.mig_profiles or placement.mig_single):
        return mapping, []
    profiles = {catalog.aliases(p) for p in placement.mig_profiles}
    if len(profiles) > 1 or (profiles and placement.whole_products):
        what = ", ".join(placement.mig_profiles) + (" and whole GPUs" if placement.whole_products else "")
        return mapping, [
            Finding(
                path,
                legacy,
                "unsupported",
                f"the GPU product selection spans MIG profiles {what}: no one DeviceClass serves "
                "them (one pod per profile converts)",
            )
        ]
    profile = placement.mig_profiles[0] if placement.mig_profiles else None
    found = mig_mapping(catalog, mapping, profile)
    if found is None and profile is not None:
        return mapping, [
            Finding(
                path,
                legacy,
                "unsupported",
                f"the node counts MIG devices of profile {profile}, which has no MIG DeviceClass",
            )
        ]
    if found is None:
        return mapping, [
            Finding(
                path,
                legacy,
                "partial",
                "MIG single strategy without a profile: allocates on the bridge, never on the vendor "
                f"driver; select nodes by {GFD_PRODUCT_LABEL} <model>-MIG-<profile> too",
            )
        ]
    return found, [
        Finding(
            path,
            legacy,
            "translated",
            f"MIG single strategy: {mapping.resource_name} counts MIG devices"
            + (f" of profile {profile}" if profile else "")
            + f", served by {found.device_class}",
        )
    ]
