"""A pod that already has a DRA claim and a leftover legacy request (half-migrated by hand):
kept unchanged with a warning by default; the options model's convertHalfMigrated converts it."""

from __future__ import annotations

import io
import json
from typing import Any

import yaml

from dra_bridge.migrate.cli import main
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.findings import Remedy
from dra_bridge.translate.plan.options import Options
from dra_bridge.translate.plan.pod_plan import plan_pod
from dra_bridge.translate.policy import Subject, load_policy, policy_remedy
from tests.factories import gpu, make_container, make_pod


def _half_migrated() -> dict[str, Any]:
    main = make_container("main", gpu(1))
    main["resources"]["claims"] = [{"name": "mine"}]
    return make_pod([main], resourceClaims=[{"name": "mine", "resourceClaimTemplateName": "by-hand"}])


def test_a_half_migrated_pod_is_kept_with_a_warning(catalog: Catalog) -> None:
    pod = _half_migrated()
    plan = plan_pod(pod, catalog, path="spec.template.")
    assert not plan.changed and plan.pod == pod and plan.templates == ()
    kept = [f for f in plan.findings if f.path == "spec.template.spec.resourceClaims"]
    assert [(f.outcome, f.remedy) for f in kept] == [("kept-legacy", Remedy.CONVERT_HALF_MIGRATED)]
    assert "half-migrated" in kept[0].reason and "mine" in kept[0].legacy
    assert policy_remedy(kept[0]) == "policy convertHalfMigrated: true converts it anyway"


def test_the_option_converts_it_beside_the_existing_claim(catalog: Catalog) -> None:
    plan = plan_pod(_half_migrated(), catalog, Options(convert_half_migrated=True))
    assert plan.changed
    claims = [c["name"] for c in plan.pod["spec"]["resourceClaims"]]
    assert claims[0] == "mine" and len(claims) == 2
    assert plan.record is not None and plan.record.options.convert_half_migrated is True
    assert '"convertHalfMigrated":true' in plan.pod["metadata"]["annotations"]["dra-bridge.io/conversion"]
    ordinary = plan_pod(make_pod([make_container("c", gpu(1))]), catalog).pod["metadata"]["annotations"]
    assert "convertHalfMigrated" not in ordinary["dra-bridge.io/conversion"]  # older readers' format kept


def test_the_policy_key_and_the_flags_set_it() -> None:
    policy = load_policy("defaults: {convertHalfMigrated: true}", "p")
    assert policy.settings_for(Subject("x")).convert_half_migrated is True
    doc = yaml.safe_dump(_half_migrated())
    for flags, changed in (([], False), (["--convert-half-migrated"], True)):
        out, err = io.StringIO(), io.StringIO()
        assert main(["convert", *flags], stdin=io.StringIO(doc), stdout=out, stderr=err) == 0
        assert ("ResourceClaimTemplate" in out.getvalue()) is changed
        assert ("half-migrated" in err.getvalue()) is not changed
        assert ("--convert-half-migrated" in err.getvalue()) is not changed
    out = io.StringIO()
    code = main(
        ["report", "-f", "-", "-o", "json", "--no-capacity"], stdin=io.StringIO(doc), stdout=out, stderr=io.StringIO()
    )
    assert code == 0 and "half-migrated" in json.dumps(json.loads(out.getvalue()))
