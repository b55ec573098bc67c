"""Every finding code the plan writes is one the report's schema accepts: the schema's enum is
closed, so a new code without its entry there would make every report that carries it invalid."""

from __future__ import annotations

import json
from importlib.resources import files

from dra_bridge.translate import findings
from dra_bridge.translate.plan import alignment, stay_legacy

SCHEMA = json.loads(files("dra_bridge.translate").joinpath("data/report-v2.schema.json").read_text())


def _schema_codes() -> set[str]:
    code = SCHEMA["properties"]["workloads"]["items"]["properties"]["findings"]["items"]["properties"]["code"]
    return set(code["enum"])


def test_every_finding_code_is_in_the_report_schema() -> None:
    written = {
        *stay_legacy.CLUSTER_STATE,
        *findings.FOREIGN_CODES,
        findings.OTHER_EXTENDED_RESOURCE,
        findings.QUOTA_CLASS_NOT_COUNTED,
        findings.OVER_API_LIMIT,
        alignment.NOT_WRITTEN,
        "",
    }
    assert written - _schema_codes() == set()
