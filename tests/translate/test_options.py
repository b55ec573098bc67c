"""The one options model (docs/design.md D26): the policy's keys, the record's keys and the
commands' flags are what the model's specs say (the flags: tests/migrate/test_option_flags.py), and each field says what it is."""

from __future__ import annotations

from dataclasses import fields

import pytest
import yaml

from dra_bridge.translate.plan.options import Options, option_specs, policy_keys, recorded_specs
from dra_bridge.translate.plan.record import ConversionRecord, RecordedOptions
from dra_bridge.translate.policy import load_policy, setting_names


def test_every_field_has_a_spec_with_a_doc_line() -> None:
    specs = option_specs()
    assert [s.attribute for s in specs] == [f.name for f in fields(Options)]
    for s in specs:
        assert s.doc and "\n" not in s.doc, s.attribute
        assert bool(s.flag) == bool(s.commands), s.attribute
        assert all(c.startswith("--") for c in [s.flag] if c), s.attribute


def test_the_policy_keys_are_the_models() -> None:
    keys = [k["key"] for k in policy_keys()]
    assert keys == [
        "convert",
        "keepLegacy",
        "hamiSlicing",
        "onError",
        "deferToKEP5004",
        "ignoreLegacyQuota",
        "draSchedulers",
        "failRequestsGreaterThanOne",
        "alignment",
        "alignmentScope",
        "convertHalfMigrated",
    ]
    assert setting_names() == tuple(s.attribute for s in option_specs() if s.policy_key)
    by_key = {k["key"]: k for k in policy_keys()}
    assert by_key["alignment"]["enum"] == ["none", "numa", "pcie"]
    assert by_key["draSchedulers"] == {**by_key["draSchedulers"], "type": "array", "items": "string", "default": []}
    assert all(k["doc"] for k in policy_keys())
    # every key parses, and an unknown one names the known keys from the model
    with pytest.raises(Exception, match="known: " + ", ".join(keys)):
        load_policy("defaults: {nope: 1}", "p")


def test_the_policy_sets_each_key_onto_its_field() -> None:
    doc = {
        "convert": False,
        "keepLegacy": True,
        "hamiSlicing": "whole-devices",
        "onError": "deny",
        "deferToKEP5004": True,
        "ignoreLegacyQuota": True,
        "draSchedulers": ["volcano"],
        "failRequestsGreaterThanOne": True,
        "alignment": "pcie",
        "alignmentScope": "pod",
        "convertHalfMigrated": True,
    }
    got = load_policy(yaml.safe_dump({"defaults": doc}), "p").defaults
    spec_of = {s.policy_key: s for s in option_specs() if s.policy_key}
    for key, value in doc.items():
        want = tuple(value) if isinstance(value, list) else value
        assert getattr(got, spec_of[key].attribute) == want, key


def test_the_record_keeps_what_the_model_says() -> None:
    assert [f.name for f in fields(RecordedOptions)] == [s.attribute for s in recorded_specs()]
    assert [s.record_key for s in recorded_specs()] == [
        "managedBy",
        "kubernetesMinor",
        "target",
        "hamiSlicing",
        "draSchedulers",
        "failRequestsGreaterThanOne",
        "alignment",
        "alignmentScope",
        "convertHalfMigrated",
    ]


def test_a_record_older_versions_wrote_still_reads() -> None:
    before_alignment = (
        '{"apiVersion":"conversion.dra-bridge.io/v1","options":{"draSchedulers":[],'
        '"failRequestsGreaterThanOne":false,"hamiSlicing":"unsupported","kubernetesMinor":34,'
        '"managedBy":"dra-bridge-webhook","target":"bridge"},"original":{},"plan":"p","templates":["t"]}'
    )
    record = ConversionRecord.parse(before_alignment)
    assert record.options == RecordedOptions("dra-bridge-webhook", 34, "bridge", "unsupported", (), False)
    assert record.to_json() == before_alignment
    assert ConversionRecord.parse('{"plan":"p","templates":["t"]}').options == RecordedOptions()
