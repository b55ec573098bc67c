"""The chart's README and values.yaml agree: every value has a comment saying why, and the
README's values table is the one generated from values.yaml (tests.chart.values_table)."""

from __future__ import annotations

import json

import pytest

from tests.chart.render import NAMESPACE, by_kind, render
from tests.chart.values_table import CHART, Uncommented, rows, table


def test_readme_values_table_is_generated_from_values_yaml() -> None:
    readme = (CHART / "README.md").read_text()
    begin, end = "<!-- values:begin -->\n", "<!-- values:end -->"
    assert begin in readme and end in readme
    shown = readme.split(begin, 1)[1].split(end, 1)[0]
    assert shown == table(), "regenerate: python -m tests.chart.values_table (between the values markers)"


def test_every_value_has_a_comment_and_a_row() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    keys = [k for k, _, _ in rows((CHART / "values.yaml").read_text(), schema)]
    assert {
        "webhook.enforce.failurePolicy",
        "webhook.enforce.timeoutSeconds",
        "agent.kubeletDir",
        "agent.cdiDirs",
        "image.repository",
        "image.tag",
        "image.pullPolicy",
        "deviceClasses.extendedResourceName",
    } <= set(keys)
    assert len(keys) == len(set(keys))


def test_an_uncommented_value_is_named() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    with pytest.raises(Uncommented, match=r"webhook\.replicas: no comment"):
        rows("webhook:\n  # the webhook\n  enabled: true\n  replicas: 2\n", schema)


def test_uninstall_says_which_cert_manager_secrets_stay_and_how_to_delete_them() -> None:
    # cert-manager's Secrets carry no owner reference by default: `helm uninstall` leaves them,
    # and a reinstall would reuse the old CA key
    objs = render(None, "--set", "webhook.certificates.mode=cert-manager")
    secrets = sorted(c["spec"]["secretName"] for c in by_kind(objs, "Certificate"))
    assert secrets == ["dra-bridge-webhook-ca", "dra-bridge-webhook-tls"]
    section = (CHART / "README.md").read_text().split("\n## Uninstall\n", 1)[1].split("\n## ", 1)[0]
    assert "removes everything" not in section
    assert f"kubectl -n {NAMESPACE} delete secret {' '.join(secrets)}" in section
