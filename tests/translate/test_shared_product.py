"""A plain ``nvidia.com/gpu: 2`` on nodes whose ``gpu.product`` ends in ``-SHARED`` (time-slicing
without renaming the resource): two replicas there, two whole GPUs under the vendor driver. The
finding says so, and ``failRequestsGreaterThanOne`` keeps such a pod legacy, as the plugin fails it."""

from __future__ import annotations

import io

import pytest
import yaml

from dra_bridge.migrate.cli import main
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.findings import Remedy
from dra_bridge.translate.plan.options import Options
from dra_bridge.translate.plan.pod_plan import plan_pod
from tests.factories import gpu, make_container, make_pod


def _pod(count: int) -> dict[str, object]:
    return make_pod([make_container("c", gpu(count))], nodeSelector={"nvidia.com/gpu.product": "Tesla-T4-SHARED"})


def test_the_vendor_target_says_two_whole_gpus(catalog: Catalog) -> None:
    plan = plan_pod(_pod(2), catalog.with_target("vendor"))
    assert plan.changed
    said = [f for f in plan.findings if f.path == "spec.containers[0].resources.limits[nvidia.com/gpu]"]
    assert any(f.outcome == "partial" and "2 whole GPUs" in f.reason for f in said), said
    one = plan_pod(_pod(1), catalog.with_target("vendor"))
    assert not [f for f in one.findings if "whole GPUs" in f.reason]


@pytest.mark.parametrize("target", ["bridge", "vendor"])
def test_fail_requests_greater_than_one_keeps_it_legacy(catalog: Catalog, target: str) -> None:
    aimed = catalog.with_target(target)  # type: ignore[arg-type]
    plan = plan_pod(_pod(2), aimed, Options(fail_requests_greater_than_one=True))
    assert not plan.changed
    kept = [f for f in plan.findings if f.remedy == Remedy.FAIL_REQUESTS_GREATER_THAN_ONE]
    assert [f.outcome for f in kept] == ["unsupported"] and "-SHARED" in kept[0].reason
    assert plan_pod(_pod(1), aimed, Options(fail_requests_greater_than_one=True)).changed
    assert plan_pod(
        make_pod([make_container("c", gpu(2))]), aimed, Options(fail_requests_greater_than_one=True)
    ).changed


def test_the_convert_flag_catches_it() -> None:
    doc = yaml.safe_dump(_pod(2))
    err = io.StringIO()
    code = main(
        ["convert", "--target", "vendor", "--fail-requests-greater-than-one", "--fail-on", "unsupported"],
        stdin=io.StringIO(doc),
        stdout=io.StringIO(),
        stderr=err,
    )
    assert code == 3 and "failRequestsGreaterThanOne" in err.getvalue()
