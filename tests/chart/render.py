"""Helm for the chart tests: find the pinned binaries (``hack/helm.sh``), render the chart.

- :func:`helm_binaries` -> {"4": Path, "3": Path}: the pinned Helm 4 and Helm 3 binaries
  (``DRA_BRIDGE_HELM4`` / ``DRA_BRIDGE_HELM3`` or ``~/.cache/dra-bridge/helm-<version>/helm``).
  Missing: the test fails in CI (``CI=true``) and skips locally, saying how to build them.
- :func:`template` -> [object]: ``helm template`` of the chart with one values file (and
  ``--kube-version`` from its ``# kube-version:`` header line, if any); raises
  :class:`HelmFailed` (command, exit status, stderr) when Helm refuses.
- :data:`CI_VALUES`: the chart's ``ci/*-values.yaml`` files (each sets the required
  ``image.repository``); :data:`REQUIRED`: the ``--set`` of it that a scenario of the chart's own
  defaults adds (``Scenario(None)``), unless ``Scenario(None, required=False)``.
- :func:`render` -> [object]: what the tests check, rendered by the pinned Helm 4 (cached), for
  one of :data:`SCENARIOS` only: every ``ci/`` values file and each of the tests' own variations.
  Every object is validated under Helm 4; Helm 3's output is only compared with it, scenario by
  scenario (``test_chart_render.py``), so a scenario missing from the list fails at once.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.translate.strict_yaml import StrictLoader

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "dra-bridge"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
RELEASE, NAMESPACE = "dra-bridge", "gpu-system"
KUBE_VERSION_LINE = re.compile(r"^# kube-version: (\S+)$", re.MULTILINE)
DEFAULT_KUBE_VERSION = "1.36.0"
REPOSITORY = "registry.example.com/dra-bridge"
REQUIRED = ("--set", f"image.repository={REPOSITORY}")
"""The one value the chart cannot render without (nothing is published)."""

Obj = dict[str, Any]


class HelmFailed(AssertionError):
    """Helm exited non-zero: the command, its status and its stderr."""


def _pins() -> dict[str, str]:
    out = subprocess.run(
        [str(ROOT / "hack" / "helm.sh"), "versions"], check=True, capture_output=True, text=True
    ).stdout
    return dict(part.split("=", 1) for part in out.split())


def helm_binaries(majors: tuple[str, ...] = ("4", "3")) -> dict[str, Path]:
    """The pinned Helm binaries by major version; fails (CI) or skips (locally) when missing."""
    pins = _pins()
    cache = Path(os.environ.get("DRA_BRIDGE_CACHE", Path.home() / ".cache" / "dra-bridge"))
    found: dict[str, Path] = {}
    for major in majors:
        override = os.environ.get(f"DRA_BRIDGE_HELM{major}")
        path = Path(override) if override else cache / f"helm-{pins[f'HELM{major}_VERSION']}" / "helm"
        if not os.access(path, os.X_OK):
            msg = f"helm {major} not found at {path}: run hack/helm.sh build"
            if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
                pytest.fail(msg, pytrace=False)
            pytest.skip(msg)
        found[major] = path
    return found


def kube_version_of(values: Path) -> str:
    """The ``# kube-version: X`` header of a values file, else the newest version CI builds."""
    m = KUBE_VERSION_LINE.search(values.read_text())
    return m.group(1) if m else DEFAULT_KUBE_VERSION


def helm(binary: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run Helm with its own empty home (no user repositories or plugins); stdout, or HelmFailed."""
    home = Path(os.environ.get("TMPDIR", "/tmp")) / "dra-bridge-helm-home"
    full_env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        **(env or {}),
    }
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, env=full_env, timeout=60)
    if proc.returncode != 0:
        raise HelmFailed(f"helm {' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def template(binary: Path, values: Path | None = None, *extra: str, kube_version: str | None = None) -> list[Obj]:
    """``helm template`` of the chart (release dra-bridge in gpu-system): the rendered objects,
    read as kubectl reads them (a duplicate key fails)."""
    version = kube_version or (kube_version_of(values) if values else DEFAULT_KUBE_VERSION)
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--kube-version", version, *extra]
    if values is not None:
        args += ["--values", str(values)]
    # duplicate keys refused, as kubectl and dra-migrate read `helm template` output
    return [d for d in yaml.load_all(helm(binary, *args), Loader=StrictLoader) if d]


def by_kind(objs: list[Obj], kind: str) -> list[Obj]:
    """The rendered objects of one kind, in order."""
    return [o for o in objs if o.get("kind") == kind]


@dataclass(frozen=True)
class Scenario:
    """One render: a ``ci/`` values file by name (``defaults`` for ``ci/defaults-values.yaml``;
    None for the chart's own defaults plus :data:`REQUIRED`, or without it when ``required`` is
    False), extra Helm arguments, and the ``--kube-version`` (None: the values file's
    ``# kube-version:`` line, else :data:`DEFAULT_KUBE_VERSION`)."""

    values: str | None = "defaults"
    extra: tuple[str, ...] = ()
    kube_version: str | None = None
    required: bool = True

    @property
    def values_file(self) -> Path | None:
        return None if self.values is None else CHART / "ci" / f"{self.values}-values.yaml"

    @property
    def args(self) -> tuple[str, ...]:
        """The extra Helm arguments, after :data:`REQUIRED` for the chart's own defaults."""
        return (REQUIRED if self.values is None and self.required else ()) + self.extra

    @property
    def id(self) -> str:
        parts = [self.values or ("chart-defaults" if self.required else "chart-bare")]
        parts += [a for a in self.extra if a != "--set"]
        joined = " ".join(parts + ([f"kube-{self.kube_version}"] if self.kube_version else []))
        return joined.replace("\n", "<newline>")  # a readable test id

    def template(self, binary: Path) -> list[Obj]:
        """This scenario rendered by ``binary`` (HelmFailed when Helm refuses it)."""
        return template(binary, self.values_file, *self.args, kube_version=self.kube_version)


def _set(*assignments: str) -> tuple[str, ...]:
    return tuple(arg for a in assignments for arg in ("--set", a))


SCENARIOS: tuple[Scenario, ...] = (
    *(Scenario(p.name.removesuffix("-values.yaml")) for p in CI_VALUES),
    # the tests' own variations (tests/chart/test_chart_*.py)
    Scenario("defaults", _set("agent.kubeletDir=/data/kubelet/")),
    Scenario("defaults", _set("catalog.target=vendor")),
    Scenario("defaults", _set("webhook.policy.defaults.keepLegacy=true")),
    Scenario("defaults", _set("webhook.policy.defaults.keepLegcy=true")),  # refused by the schema
    Scenario("defaults", _set("webhook.policy.defaults.alignment=socket")),  # refused by the schema
    Scenario("defaults", _set("webhook.enforce.failurePolicy=Ignore", "webhook.audit.allNamespaces=true")),
    Scenario("defaults", _set("fullnameOverride=dra")),
    Scenario("defaults", _set("fullnameOverride=dra-bridge")),
    Scenario("kube-1.32", _set("deviceClasses.extendedResourceName=true")),  # refused
    Scenario("production", _set("webhook.podDisruptionBudget.maxUnavailable=1")),  # refused: both set
    Scenario("production", _set("webhook.port=10250")),  # refused: the kubelet's port on the host network
    Scenario("defaults", _set("agent.nodeSelector=gpu")),  # refused by the schema
    Scenario("defaults", _set("webhook.networkPolicy.enabled=true")),
    Scenario("defaults", _set("webhook.networkPolicy.enabled=yes")),  # refused by the schema
    Scenario("defaults", _set("webhook.drain.preStopSeconds=0", "webhook.drain.periodSeconds=8")),
    Scenario("defaults", _set("webhook.terminationGracePeriodSeconds=10")),  # refused: shorter than the drain
    Scenario("defaults", _set("agent.priorityClassQuota.enabled=true")),
    Scenario(
        "defaults",
        _set(
            "agent.priorityClassQuota.enabled=true",
            "agent.priorityClassQuota.pods=40",
            "agent.priorityClassName=gpu-crit",
        ),
    ),
    Scenario("defaults", _set("agent.priorityClassQuota.enabled=true", "agent.priorityClassQuota.pods=0")),  # refused
    Scenario("defaults", _set("agent.priorityClassQuota.enabled=true", "agent.priorityClassName=")),  # refused
    Scenario("monitoring", _set("agent.settlePeriod=600", "webhook.enforce.timeoutSeconds=10")),
    Scenario("monitoring", _set("webhook.audit.enabled=false", "agent.enabled=false")),
    Scenario("monitoring", _set("monitoring.podMonitor.interval=30")),  # refused by the schema
    Scenario("monitoring", _set("monitoring.serviceMonitor.port=8443")),  # refused: the webhook port
    Scenario("monitoring", _set("monitoring.prometheusRule.alertLabels.team-a=gpu")),  # refused by the schema
    Scenario("monitoring", _set("monitoring.prometheusRule.alertLabels.team_a=gpu")),
    Scenario("nvml", _set("agent.enabled=false")),  # refused: the NVML agent needs the agent
    Scenario(None),
    Scenario(None, kube_version="1.33.0"),
    Scenario(None, kube_version="1.34.0"),
    Scenario(None, _set("agent.validatingAdmissionPolicies=false")),
    Scenario(None, _set("webhook.certificates.mode=cert-manager")),
    Scenario(
        None, _set("webhook.certificates.mode=cert-manager", "webhook.certificates.certManager.caDuration=43800h")
    ),
    Scenario(None, _set("webhook.certificates.mode=existing-secret")),  # refused: no secret name
    Scenario(
        None, _set("webhook.certificates.mode=cert-manager", "webhook.certificates.certManager.renewBefore=2160h")
    ),  # refused: not shorter than the duration
    Scenario(
        None,
        _set(
            "webhook.certificates.mode=cert-manager",
            "webhook.certificates.certManager.duration=1h30m",
            "webhook.certificates.certManager.renewBefore=90m",
        ),
    ),  # refused: not shorter than the duration
    Scenario(
        None,
        _set(
            "webhook.certificates.mode=cert-manager",
            "webhook.certificates.certManager.duration=1h30m",
            "webhook.certificates.certManager.renewBefore=89m59.5s",
        ),
    ),
    Scenario(
        None,
        _set("webhook.certificates.mode=cert-manager", "webhook.certificates.certManager.issuerRef.kind=ClusterIssuer"),
    ),  # refused: no issuer name
    Scenario(None, _set("webhok.replicas=3")),  # refused by the schema
    Scenario(None, _set("webhook.enforce.failurePolicy=Sometimes")),  # refused by the schema
    # the image (tests/chart/test_chart_image.py)
    Scenario(None, required=False),  # refused: no image.repository
    Scenario(None, _set("image.tag=1.2.3")),
    Scenario(None, _set("image.digest=sha256:" + "ab" * 32, "image.tag=1.2.3")),
    Scenario(None, _set("image.digest=sha256:" + "AB" * 32)),  # refused by the schema
    Scenario(None, _set("image.digest=" + "ab" * 32)),  # refused by the schema: no algorithm
    Scenario(None, _set("image.repository=r.example.com/dra-bridge@sha256:" + "ab" * 32)),  # refused
    Scenario(None, _set("imageRegistry=r.example.com/", "image.repository=team/dra-bridge")),
    Scenario(
        None,
        (
            "--set-string",
            "image.tag=1\n      hostPID: true\n      initContainers:\n        - name: x\n          image: busybox",
        ),
    ),  # refused
    Scenario(None, ("--set-string", "imageRegistry=r.example.com: x/")),
    Scenario(None, _set("image.repository=reg.example.com/x:latest")),  # refused by the schema: a tag
    # values pasted into the agent's flow mappings (tests/chart/test_chart_quoting.py)
    Scenario("defaults", ("--set-string", "agent.stateDir=/var/lib/x\\, subPathExpr: $(DRA_BRIDGE_NODE_NAME)")),
    Scenario("defaults", ("--set-string", "agent.kubeletDir=/var/lib/k\\, readOnly: true")),
    Scenario("defaults", ("--set-string", "agent.cdiDirs[0]=/etc/cdi #x")),
    Scenario("nvml", ("--set-string", "agent.nvml.driverRoot=/run/nvidia/driver\\, type: File")),
    Scenario("defaults", ("--set-string", "agent.cdiDirs[0]=/etc/cdi\\,/x")),  # refused by the schema
    Scenario("defaults", ("--set-string", "agent.stateDir=/var/lib/x\nhostPID: true")),  # refused by the schema
    # a catalog pattern with CEL string delimiters (tests/chart/test_chart_webhook.py)
    Scenario("defaults", ("--set-string", "catalog.resources[0].pattern=example.com/o'k\\\\\"x-{profile}")),
    Scenario(None, _set("agent.nvml.enabled=true")),
    Scenario(
        "nvml",
        _set(
            "agent.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
            "agent.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
            ".operator=Exists",
        ),
    ),
    Scenario("nvml", _set("agent.nvml.enabled=yes")),  # refused by the schema
    Scenario("nvml", _set("agent.nvml.driverRoot=run/nvidia/driver")),  # refused by the schema
    Scenario(
        "nvml", _set("agent.nvml.nodeLabels[0].key=nvidia.com/gpu.present", "agent.nvml.nodeLabels[0].operator=NotIn")
    ),  # refused
)
"""Every render the chart tests make: each is checked under Helm 4 and compared with Helm 3's."""


def render(
    values: str | None = "defaults", *extra: str, kube_version: str | None = None, required: bool = True
) -> list[Obj]:
    """The objects Helm 4 renders for a scenario of :data:`SCENARIOS` (cached: do not change them);
    HelmFailed when Helm refuses it."""
    scenario = Scenario(values, extra, kube_version, required)
    if scenario not in SCENARIOS:
        raise AssertionError(
            f"render scenario {scenario} is not in tests/chart/render.py SCENARIOS: add it there, so that "
            "Helm 3's output is compared with Helm 4's for it too"
        )
    return _render4(scenario)


@functools.cache
def _render4(scenario: Scenario) -> list[Obj]:
    return scenario.template(helm_binaries(("4",))["4"])
