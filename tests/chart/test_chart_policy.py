"""The chart's policy is validated at render time (docs/design.md D36): values.schema.json holds
the policy's grammar, generated from the options model (tests/chart/policy_schema.py), so a
misspelt key or a wrong type fails ``helm install`` instead of the next pod start; the schema
accepts what the webhook's parser accepts; a policy change rolls the pods (``checksum/policy``)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from dra_bridge.translate.errors import PolicyError
from dra_bridge.translate.policy import parse_policy
from tests.chart import policy_schema
from tests.chart.render import HelmFailed, Obj, by_kind, render

SCHEMA: dict[str, Any] = json.loads(policy_schema.SCHEMA.read_text())


def _policy_validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator({**SCHEMA, "properties": {"p": {"$ref": "#/definitions/policy"}}})


def test_the_schema_s_policy_grammar_is_generated_from_the_options_model() -> None:
    expected = policy_schema.definitions()
    found = {k: SCHEMA["definitions"].get(k) for k in expected}
    assert found == expected, "run: python -m tests.chart.policy_schema"
    assert SCHEMA["properties"]["webhook"]["properties"]["policy"] == {"$ref": "#/definitions/policy"}


#: Policies both the parser and the schema accept.
GOOD: list[Any] = [
    {},
    {"apiVersion": "policy.dra-bridge.io/v1"},
    {"defaults": {"keepLegacy": True, "alignment": "numa", "draSchedulers": ["volcano", "my.sched"]}},
    {"rules": [{"name": "ml", "match": {"namespaces": ["ml-*"], "podLabels": {"team": "ml"}}, "convert": False}]},
    {"rules": [{"match": {}, "onError": "deny", "hamiSlicing": "whole-devices"}]},
]
#: Policies both refuse: a misspelt key anywhere, a wrong type, a bad choice, a bad name.
BAD: list[Any] = [
    {"default": {}},
    {"apiVersion": "policy.dra-bridge.io/v2"},
    {"defaults": {"keepLegcy": True}},
    {"defaults": {"keepLegacy": "yes"}},
    {"defaults": {"alignment": "socket"}},
    {"defaults": {"draSchedulers": "volcano"}},
    {"defaults": {"draSchedulers": ["Volcano_Sched"]}},
    {"defaults": []},
    {"rules": {}},
    {"rules": [{"name": "no-match", "convert": False}]},
    {"rules": [{"match": {"namespace": ["a"]}}]},
    {"rules": [{"match": {"podLabels": {"team": 1}}}]},
    {"rules": [{"match": {}, "name": ""}]},
    {"rules": [{"match": {}, "onErorr": "deny"}]},
]


@pytest.mark.parametrize("doc", GOOD, ids=[json.dumps(d) for d in GOOD])
def test_the_schema_accepts_what_the_parser_accepts(doc: Any) -> None:
    parse_policy(doc, "values")
    assert not list(_policy_validator().iter_errors({"p": doc}))


@pytest.mark.parametrize("doc", BAD, ids=[json.dumps(d) for d in BAD])
def test_the_schema_refuses_what_the_parser_refuses(doc: Any) -> None:
    with pytest.raises(PolicyError):
        parse_policy(doc, "values")
    assert list(_policy_validator().iter_errors({"p": doc}))


def test_a_misspelt_policy_key_fails_the_render() -> None:
    with pytest.raises(HelmFailed, match="keepLegcy"):
        render("defaults", "--set", "webhook.policy.defaults.keepLegcy=true")
    with pytest.raises(HelmFailed, match="policy"):
        render("defaults", "--set", "webhook.policy.defaults.alignment=socket")


def _template(objs: list[Obj]) -> Obj:
    (deployment,) = by_kind(objs, "Deployment")
    return deployment["spec"]["template"]  # type: ignore[no-any-return]


def test_a_policy_change_rolls_the_webhook_pods_and_running_pods_keep_theirs() -> None:
    def checksum(objs: list[Obj]) -> str:
        return str(_template(objs)["metadata"]["annotations"]["checksum/policy"])

    base = checksum(render())
    assert checksum(render("defaults", "--set", "webhook.policy.defaults.keepLegacy=true")) != base
    assert checksum(render("defaults", "--set", "catalog.target=vendor")) == base
    mounts = _template(render())["spec"]["containers"][0]["volumeMounts"]
    # subPath: a running pod never sees the ConfigMap change, so it keeps the policy it was
    # started with while the rollout's new pods (surge) prove the new one
    assert [m.get("subPath") for m in mounts if m["name"] == "policy"] == ["policy.yaml"]
