"""translate/label_selector.py: the API server's label selector rules."""

from __future__ import annotations

import json

import pytest

from dra_bridge.translate.label_selector import LabelSelector


def test_an_empty_selector_selects_everything() -> None:
    assert LabelSelector.from_mapping({}).selects({}) and LabelSelector.from_mapping(None).empty


def test_match_labels_and_every_operator_are_anded() -> None:
    sel = LabelSelector.from_mapping(
        {
            "matchLabels": {"tenant": "a"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["prod", "staging"]},
                {"key": "zone", "operator": "NotIn", "values": ["x"]},
                {"key": "gpu", "operator": "Exists"},
                {"key": "skip", "operator": "DoesNotExist"},
            ],
        }
    )
    assert sel.selects({"tenant": "a", "tier": "prod", "gpu": ""})
    assert sel.selects({"tenant": "a", "tier": "staging", "gpu": "1", "zone": "y"})
    assert not sel.selects({"tenant": "b", "tier": "prod", "gpu": ""})
    assert not sel.selects({"tenant": "a", "tier": "dev", "gpu": ""})
    assert not sel.selects({"tenant": "a", "tier": "prod", "gpu": "", "zone": "x"})
    assert not sel.selects({"tenant": "a", "tier": "prod"})
    assert not sel.selects({"tenant": "a", "tier": "prod", "gpu": "", "skip": ""})


def test_an_unknown_operator_is_refused() -> None:
    with pytest.raises(ValueError, match="Gt"):
        LabelSelector.from_mapping({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})


def test_a_flags_json_round_trips_through_its_mapping() -> None:
    doc = {
        "matchLabels": {"tenant": "a"},
        "matchExpressions": [
            {"key": "tier", "operator": "NotIn", "values": ["sandbox"]},
            {"key": "skip", "operator": "DoesNotExist"},
        ],
    }
    sel = LabelSelector.from_json(json.dumps(doc))
    assert sel.as_mapping() == doc and LabelSelector.from_mapping(sel.as_mapping()) == sel
    assert LabelSelector.from_json("").empty and LabelSelector.from_json(" {} ").as_mapping() == {}


@pytest.mark.parametrize(
    "text",
    [
        "[",
        "null",
        '{"matchLabels": ["a"]}',
        '{"matchLabels": {"a": true}}',
        '{"matchExpressions": {"key": "a"}}',
        '{"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]}',
        '{"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}',
        '{"matchExpressions": [{"key": "a", "operator": "Exists", "value": "x"}]}',
    ],
)
def test_a_malformed_selector_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        LabelSelector.from_json(text)
