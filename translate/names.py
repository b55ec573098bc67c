"""Well-known names, each defined once: API versions, labels, annotations, domains, drivers.

Every name that dra-bridge writes into objects or reads from them (and that another
component must spell the same way) lives here; everything else imports it.

API versions
    ``resource.k8s.io``: ``v1`` (Kubernetes 1.34+), ``v1beta2`` (1.33), ``v1beta1`` (1.32), the
    versions translate renders (docs/design.md D7); ``catalog.dra-bridge.io/v1`` for catalogs.
Labels and annotations
    ``app.kubernetes.io/managed-by`` on what we create (DeviceClasses and ResourceSlices:
    ``dra-bridge``; ResourceClaimTemplates: ``dra-migrate`` or ``dra-bridge-webhook``, by who
    wrote them), ``dra-bridge.io/converted`` on converted pods and their claims,
    ``dra-bridge.io/conversion`` (the conversion record) on converted pods,
    ``dra-bridge.io/mode`` on Nodes handed over to DRA, ``dra-bridge.io/legacy-resource`` on our
    DeviceClasses; GPU Feature Discovery labels and HAMi annotations under ``nvidia.com/``.
Domains and drivers
    ``dra-bridge.io`` (the bridge's default driver name and attribute domain),
    ``nvidia.com`` (the NVIDIA device plugin's resources, GFD's labels and the container
    toolkit's CDI kind ``nvidia.com/gpu``),
    ``gpu.nvidia.com`` (the NVIDIA DRA driver and its attribute domain),
    ``resource.kubernetes.io`` (standard attributes: ``pciBusID``, ``pcieRoot``, ``numaNode``),
    and the ResourceQuota key suffix of DRA device counts (KEP-4381).
Accelerator resources
    the extended-resource domains of accelerator device plugins (``ACCELERATOR_DOMAINS``,
    ``is_accelerator_resource``): what the report calls an unknown device when the catalog does
    not know it; instaslice's domain (another slicing controller's pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from dra_bridge.translate.errors import ApiVersionError

# ------------------------------------------------------------------ API versions

#: The resource.k8s.io versions translate renders, newest first.
API_VERSIONS: Final[tuple[str, ...]] = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")
DEFAULT_API_VERSION: Final = "resource.k8s.io/v1"
#: The Kubernetes minor release that introduced each version: what a target serving only
#: that version can be assumed to run (used for CEL library availability).
MINOR_FOR_VERSION: Final[dict[str, int]] = {
    "resource.k8s.io/v1": 34,
    "resource.k8s.io/v1beta2": 33,
    "resource.k8s.io/v1beta1": 32,
}
CATALOG_API_VERSION: Final = "catalog.dra-bridge.io/v1"


def normalize_api_version(value: str) -> str:
    """Accept ``v1`` or ``resource.k8s.io/v1`` (and the beta versions); raise ApiVersionError otherwise."""
    full = value if "/" in value else f"resource.k8s.io/{value}"
    if full not in API_VERSIONS:
        raise ApiVersionError(f"unsupported resource.k8s.io version {value!r} (one of: v1, v1beta2, v1beta1)")
    return full


# ------------------------------------------------------------------ labels and annotations

#: The label key saying which tool manages an object.
MANAGED_BY: Final = "app.kubernetes.io/managed-by"
#: Its value on our DeviceClasses and ResourceSlices.
MANAGED_BY_BRIDGE: Final = "dra-bridge"
#: Its value on ResourceClaimTemplates written by ``dra-migrate convert``.
MANAGED_BY_CONVERT: Final = "dra-migrate"
#: Its value on ResourceClaimTemplates the webhook creates (only those are garbage-collected).
MANAGED_BY_WEBHOOK: Final = "dra-bridge-webhook"
#: ``"true"`` on converted pods and on the claims generated for them.
CONVERTED_LABEL: Final = "dra-bridge.io/converted"
#: A converted pod's record: plan hash, template names, the original requests.
CONVERSION_ANNOTATION: Final = "dra-bridge.io/conversion"
#: The namespace label whose value (``audit`` or ``enforce``) enrols a namespace's pods in that
#: webhook path (the chart's ``webhook.namespaceLabel`` default; translate/enrolment.py).
WEBHOOK_MODE_LABEL: Final = "dra-bridge.io/webhook"
#: A namespace with this label (any value) is never sent to the webhook (``webhook.optOutLabel``).
WEBHOOK_OPT_OUT_LABEL: Final = "dra-bridge.io/webhook-opt-out"
#: The label the API server sets on every Namespace to its name (the chart's selector matches it).
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
#: A Node's allocator: ``dra`` once handed over to DRA (docs/design.md D6), else legacy.
NODE_MODE_LABEL: Final = "dra-bridge.io/mode"
#: The legacy resource one of our DeviceClasses serves.
LEGACY_RESOURCE_ANNOTATION: Final = "dra-bridge.io/legacy-resource"
#: The NVIDIA device plugin's resource domain (``nvidia.com/gpu``, ``nvidia.com/mig-1g.5gb``).
NVIDIA_RESOURCE_DOMAIN: Final = "nvidia.com"
#: The prefix of the NVIDIA device plugin's resource names: what marks a device as NVIDIA's.
NVIDIA_RESOURCE_PREFIX: Final = f"{NVIDIA_RESOURCE_DOMAIN}/"
#: GPU Feature Discovery's label prefix (the same as the device plugin's resource prefix).
GFD_PREFIX: Final = NVIDIA_RESOURCE_PREFIX
#: GFD's GPU model label (``NVIDIA-A100-SXM4-40GB``; ``-MIG-<profile>`` on MIG single-strategy
#: nodes, ``-SHARED`` when time-slicing renames the resource); the default node-pool label of reports.
GFD_PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
#: GFD's GPU memory label, in MiB.
GFD_MEMORY_LABEL: Final = "nvidia.com/gpu.memory"
#: GFD's architecture family label (``ampere``, ``ada-lovelace``).
GFD_FAMILY_LABEL: Final = "nvidia.com/gpu.family"
#: GFD's CUDA compute capability labels, major and minor.
GFD_COMPUTE_MAJOR_LABEL: Final = "nvidia.com/gpu.compute.major"
GFD_COMPUTE_MINOR_LABEL: Final = "nvidia.com/gpu.compute.minor"
#: GFD's MIG strategy label: ``single`` where ``nvidia.com/gpu`` counts MIG devices.
GFD_MIG_STRATEGY_LABEL: Final = "nvidia.com/mig.strategy"
#: The NVIDIA container toolkit's CDI kind (``nvidia-ctk cdi generate``): its devices are
#: ``nvidia.com/gpu=<UUID>``, one per GPU or MIG device.
NVIDIA_TOOLKIT_CDI_KIND: Final = "nvidia.com/gpu"
HAMI_USE_TYPE: Final = "nvidia.com/use-gputype"
HAMI_NOUSE_TYPE: Final = "nvidia.com/nouse-gputype"
HAMI_USE_UUID: Final = "nvidia.com/use-gpuuuid"
HAMI_NOUSE_UUID: Final = "nvidia.com/nouse-gpuuuid"
#: HAMi's device-filter annotations, each of which becomes a device selector.
HAMI_ANNOTATIONS: Final = (HAMI_USE_TYPE, HAMI_NOUSE_TYPE, HAMI_USE_UUID, HAMI_NOUSE_UUID)

# ------------------------------------------------------------------ domains and drivers

#: The bridge's default DRA driver name, also the domain of its own attributes.
BRIDGE_DRIVER: Final = "dra-bridge.io"
#: The NVIDIA DRA driver's name and the domain of its attributes (docs/design.md D5).
NVIDIA_DRIVER: Final = "gpu.nvidia.com"
#: The AMD and Intel DRA drivers' names (ROCm/k8s-gpu-dra-driver, intel/intel-resource-drivers-for-kubernetes).
AMD_DRIVER: Final = "gpu.amd.com"
INTEL_DRIVER: Final = "gpu.intel.com"
#: The domain of standard device attributes (``pciBusID``, ``pcieRoot``, ``numaNode``).
STANDARD_DOMAIN: Final = "resource.kubernetes.io"
#: ``<DeviceClass><suffix>``: the ResourceQuota key counting devices of a class (KEP-4381).
DRA_QUOTA_SUFFIX: Final = ".deviceclass.resource.k8s.io/devices"

# ------------------------------------------------------------------ accelerator resources

#: instaslice's domain (openshift/instaslice-operator): its scheduling gate
#: (``org.instaslice/accelarator``, later spelled ``accelerator``) and the extended resource it
#: gives each pod (``org.instaslice/<pod>``), both under this prefix.
INSTASLICE_DOMAIN: Final = "org.instaslice"
#: Domains of other slicing controllers: a pod gated by one, or asking for one's per-pod
#: resource, is that controller's (``other-gpu-controller``).
SLICING_CONTROLLER_DOMAINS: Final[tuple[str, ...]] = (INSTASLICE_DOMAIN,)
#: The GPU Operator's validation pods, by their ``app`` label: the operator-validator DaemonSet
#: (https://github.com/NVIDIA/gpu-operator/blob/main/assets/state-operator-validation/0500_daemonset.yaml)
#: and the pods its validator creates to run a CUDA workload and to ask the device plugin for a
#: GPU (https://github.com/NVIDIA/gpu-operator/blob/main/validator/manifests/cuda-workload-validation.yaml,
#: ``nvidia-device-plugin-validator`` beside it); all run as the service account below.
GPU_OPERATOR_VALIDATOR_APPS: Final[tuple[str, ...]] = (
    "nvidia-operator-validator",
    "nvidia-cuda-validator",
    "nvidia-device-plugin-validator",
)
GPU_OPERATOR_VALIDATOR_ACCOUNT: Final = "nvidia-operator-validator"
#: Volcano's Job API group and the scheduler its job admission webhook sets when a Job names none
#: (patchDefaultScheduler, https://github.com/volcano-sh/volcano/blob/master/pkg/webhooks/admission/jobs/mutate/mutate_job.go);
#: the Job's pods run under the Job's ``spec.schedulerName``, which the task templates do not carry.
VOLCANO_JOB_GROUP: Final = "batch.volcano.sh"
VOLCANO_SCHEDULER: Final = "volcano"
#: Extended-resource domains of accelerator device plugins: a resource of one that the catalog
#: does not know is a device nobody migrates (``unknown-device-resource``); an extended resource
#: of any other domain (SR-IOV, RDMA, KubeVirt, fuse) is not a device of ours
#: (``other-extended-resource``). NVIDIA, AMD and Intel's device plugins; the vendors of HAMi's
#: device config (Project-HAMi/HAMi, charts/hami/templates/scheduler/device-configmap.yaml:
#: Cambricon, Hygon, MetaX, Enflame, Moore Threads, Iluvatar) and Huawei's Ascend plugin;
#: instaslice. ``dra-migrate --device-domain`` adds more.
ACCELERATOR_DOMAINS: Final[tuple[str, ...]] = (
    NVIDIA_RESOURCE_DOMAIN,
    "amd.com",
    "gpu.intel.com",
    "cambricon.com",
    "hygon.com",
    "metax-tech.com",
    "enflame.com",
    "mthreads.com",
    "iluvatar.ai",
    "huawei.com",
    *SLICING_CONTROLLER_DOMAINS,
)
#: Accelerator name prefixes in domains that also hold other resources: Volcano's vGPU device
#: plugin (``volcano.sh/vgpu-number``, ``-memory``, ``-cores``).
ACCELERATOR_PREFIXES: Final[tuple[str, ...]] = ("volcano.sh/vgpu-",)


def is_accelerator_resource(name: str, extra: tuple[str, ...] = ()) -> bool:
    """True when the extended resource ``name`` is in an accelerator domain (or has an accelerator
    prefix). ``extra``: more of them, each a domain (``xilinx.com``) or, with a slash, a name
    prefix (``example.org/npu-``)."""
    domain = name.split("/", 1)[0]
    domains = (*ACCELERATOR_DOMAINS, *(e for e in extra if "/" not in e))
    prefixes = (*ACCELERATOR_PREFIXES, *(e for e in extra if "/" in e))
    return domain in domains or name.startswith(prefixes)


# ------------------------------------------------------------------ pods not yet named

NOT_YET_NAMED: Final = "(not yet named)"
"""What stands for the name the API server gives a pod with only ``generateName``."""


def pod_name(metadata: Mapping[str, Any]) -> str:
    """A pod's ``metadata.name``, or for one with only ``generateName`` (named at creation) that
    prefix and :data:`NOT_YET_NAMED`: the name the report and ``simulate`` give it."""
    name = metadata.get("name")
    return str(name) if name else f"{metadata.get('generateName') or '?'}{NOT_YET_NAMED}"
