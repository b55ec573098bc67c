"""The chart's ServiceMonitor, PodMonitor and PrometheusRule against the Prometheus Operator's own
CRDs (issue 28): the three CRDs of ``example/prometheus-operator-crd/`` (fetched from the Go
module proxy by ``hack/promtool.sh build``) are installed on the test API server, the rendered
objects are created with ``dryRun=All`` and accepted, and an object with a field of the wrong
type is refused: the API server enforces the CRDs' schema, so the acceptance means something.

The CRDs stay installed for the rest of the session (nothing else uses monitoring.coreos.com).
The 1.36 pass only: the CRDs' schema does not depend on the server's version.
"""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from dra_bridge.kube.errors import KubeError
from tests.chart.monitoring import KINDS, monitoring_objects
from tests.chart.render import CHART, ROOT, Obj, helm_binaries, template
from tests.e2e.kubeapi import KubeClient, wait_for

pytestmark = pytest.mark.e2e

CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PLURALS = {"ServiceMonitor": "servicemonitors", "PodMonitor": "podmonitors", "PrometheusRule": "prometheusrules"}


def _crd_dir() -> Path:
    proc = subprocess.run(
        [str(ROOT / "hack" / "promtool.sh"), "crds"], capture_output=True, text=True, check=False, timeout=30
    )
    path = Path(proc.stdout.strip())
    if proc.returncode != 0 or not path.is_dir():
        msg = f"the prometheus-operator CRDs are not fetched ({proc.stderr.strip()}): run hack/promtool.sh build"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    return path


def _install_crds(kube: KubeClient) -> None:
    for plural in PLURALS.values():
        crd = yaml.safe_load((_crd_dir() / f"monitoring.coreos.com_{plural}.yaml").read_text())
        name = crd["metadata"]["name"]
        if not kube.exists(f"{CRD}/{name}"):
            kube.create(CRD, crd)
        wait_for(
            lambda name=name: any(  # type: ignore[misc]
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (kube.get(f"{CRD}/{name}").get("status") or {}).get("conditions") or []
            ),
            30,
            f"the {name} CRD established",
        )


def _path(obj: Obj) -> str:
    return f"/apis/{obj['apiVersion']}/namespaces/{obj['metadata']['namespace']}/{PLURALS[obj['kind']]}"


def _rendered(namespace: str) -> dict[str, Obj]:
    placed = [f"monitoring.{key}.namespace={namespace}" for key in ("serviceMonitor", "podMonitor", "prometheusRule")]
    objs = template(
        helm_binaries(("4",))["4"],
        CHART / "ci" / "monitoring-values.yaml",
        *(arg for a in placed for arg in ("--set", a)),
    )
    return monitoring_objects(objs)


def test_the_operator_s_crds_accept_the_rendered_objects_and_refuse_a_broken_one(
    kube: KubeClient, namespace: str
) -> None:
    _install_crds(kube)
    objs = _rendered(namespace)
    assert set(objs) == set(KINDS)
    for kind, obj in objs.items():
        created = kube.create(_path(obj), obj, dry_run=True)
        assert created["kind"] == kind and created["metadata"]["namespace"] == namespace
        assert created["spec"] == obj["spec"], kind  # nothing pruned: every field is in the schema
    # a scrape interval as a number, an alert's `for` that is no duration: refused by the schema
    monitor = copy.deepcopy(objs["ServiceMonitor"])
    monitor["spec"]["endpoints"][0]["interval"] = 30
    with pytest.raises(KubeError, match="interval"):
        kube.create(_path(monitor), monitor, dry_run=True)
    rule = copy.deepcopy(objs["PrometheusRule"])
    rule["spec"]["groups"][0]["rules"][0]["for"] = "ten minutes"
    with pytest.raises(KubeError, match="for"):
        kube.create(_path(rule), rule, dry_run=True)
    # dry runs: nothing was stored
    for obj in objs.values():
        assert kube.list(_path(obj)) == []
