"""translate/enrolment.py: which webhook paths see a namespace's pods, and what would enrol it."""

from __future__ import annotations

from dra_bridge.translate.enrolment import EnrolmentSettings, enrolment

S = EnrolmentSettings(release_namespace="gpu-system")


def test_enforce_label_enrols_for_conversion() -> None:
    e = enrolment("team-a", {"dra-bridge.io/webhook": "enforce"}, S)
    assert (e.paths, e.mode, e.enrol_with) == (("enforce",), "enforce", "")


def test_unlabelled_namespace_names_the_label_that_enrols_it() -> None:
    e = enrolment("team-a", {}, S)
    assert (e.paths, e.mode, e.known) == ((), "none", True)
    assert e.enrol_with == "label it dra-bridge.io/webhook=enforce"


def test_audit_all_namespaces_sees_but_does_not_convert() -> None:
    e = enrolment("team-a", {}, EnrolmentSettings(audit_all_namespaces=True))
    assert (e.paths, e.mode) == (("audit",), "audit") and "every namespace is audited" in e.reason


def test_kube_system_release_namespace_and_opt_out_are_never_enrolled() -> None:
    for name in ("kube-system", "gpu-system"):
        e = enrolment(name, {"dra-bridge.io/webhook": "enforce"}, S)
        assert (e.paths, e.known, e.enrol_with) == ((), True, "")
        assert enrolment(name, None, S).known  # decided by the name alone
    opted = enrolment("team-a", {"dra-bridge.io/webhook": "enforce", "dra-bridge.io/webhook-opt-out": ""}, S)
    assert opted.paths == () and opted.enrol_with == "remove the label dra-bridge.io/webhook-opt-out"


def test_without_the_namespace_object_or_name_enrolment_is_not_known() -> None:
    assert enrolment("team-a", None, S).mode == "unknown"
    assert "no Namespace object" in enrolment("team-a", None, S).reason
    assert enrolment("", {}, S).mode == "unknown"
    # without a release namespace given, a namespace of that name is judged by its labels
    assert enrolment("gpu-system", {"dra-bridge.io/webhook": "enforce"}, EnrolmentSettings()).mode == "enforce"


def test_custom_labels_and_disabled_paths() -> None:
    custom = EnrolmentSettings(mode_label="example.com/dra", opt_out_label="example.com/skip", enforce=False)
    assert enrolment("t", {"example.com/dra": "enforce"}, custom).paths == ()
    assert enrolment("t", {"example.com/dra": "enforce"}, custom).enrol_with == "enable webhook.enforce"
    assert enrolment("t", {"example.com/dra": "audit"}, custom).paths == ("audit",)


def test_extra_namespace_and_object_selector_terms_narrow_enrolment() -> None:
    from dra_bridge.translate.label_selector import LabelSelector

    settings = EnrolmentSettings(
        release_namespace="gpu-system",
        namespace_selector=LabelSelector.from_mapping({"matchLabels": {"tenant": "gpu"}}),
        object_selector=LabelSelector.from_mapping(
            {"matchExpressions": [{"key": "no-dra", "operator": "DoesNotExist"}]}
        ),
    )
    enforced = {"dra-bridge.io/webhook": "enforce"}
    assert enrolment("t", enforced, settings).paths == ()
    assert "namespaceSelector" in enrolment("t", enforced, settings).reason
    assert enrolment("t", {**enforced, "tenant": "gpu"}, settings).paths == ("enforce",)
    assert enrolment("t", {**enforced, "tenant": "gpu"}, settings, pod_labels={"no-dra": ""}).paths == ()
    assert enrolment("t", {**enforced, "tenant": "gpu"}, settings, pod_labels={"app": "x"}).paths == ("enforce",)
