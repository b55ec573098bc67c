"""The chart's cert-manager mode: without an issuer of the user's, a chain of its own (a
SelfSigned Issuer that signs only a long-lived CA Certificate whose key is never rotated, a CA
Issuer on that CA's Secret, the serving Certificate from the CA Issuer) and the registration's
caBundle injected from the CA Certificate, so a renewal of the serving pair leaves the caBundle
as it is (docs/design.md D50). With an issuer of the user's: one Certificate, injected from it.
The chain working is proven on a real cert-manager by tests/e2e/test_cert_manager_e2e.py."""

from __future__ import annotations

import pytest

from tests.chart.render import NAMESPACE, HelmFailed, Obj, by_kind, render

OWN = ("--set", "webhook.certificates.mode=cert-manager")
SVC = "dra-bridge-webhook"


def _named(objs: list[Obj], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in by_kind(objs, kind)}


def _chain(*extra: str) -> tuple[dict[str, Obj], dict[str, Obj], Obj]:
    objs = render(None, *OWN, *extra)
    reg = by_kind(objs, "MutatingWebhookConfiguration")[0]
    return _named(objs, "Issuer"), _named(objs, "Certificate"), reg


def test_own_chain_is_selfsigned_then_a_ca_then_the_serving_certificate() -> None:
    issuers, certs, _ = _chain()
    assert set(issuers) == {f"{SVC}-selfsigned", f"{SVC}-ca"}
    assert set(certs) == {f"{SVC}-ca", SVC}
    assert issuers[f"{SVC}-selfsigned"]["spec"] == {"selfSigned": {}}
    ca = certs[f"{SVC}-ca"]["spec"]
    assert ca["isCA"] is True
    assert ca["issuerRef"] == {"name": f"{SVC}-selfsigned", "kind": "Issuer", "group": "cert-manager.io"}
    # the CA's key is kept across its own renewals: a renewed CA certificate still verifies the
    # serving certificates it signed before
    assert ca["privateKey"]["rotationPolicy"] == "Never"
    assert ca["duration"] == "87600h"
    assert issuers[f"{SVC}-ca"]["spec"] == {"ca": {"secretName": ca["secretName"]}}
    leaf = certs[SVC]["spec"]
    assert leaf["issuerRef"] == {"name": f"{SVC}-ca", "kind": "Issuer", "group": "cert-manager.io"}
    assert leaf["privateKey"]["rotationPolicy"] == "Always"
    assert leaf["secretName"] == f"{SVC}-tls" != ca["secretName"]
    assert "isCA" not in leaf
    assert f"{SVC}.{NAMESPACE}.svc" in leaf["dnsNames"]
    for obj in [*issuers.values(), *certs.values()]:
        assert obj["metadata"]["namespace"] == NAMESPACE


def test_the_self_signed_issuer_signs_only_the_ca() -> None:
    _, certs, _ = _chain()
    signed = [name for name, c in certs.items() if c["spec"]["issuerRef"]["name"] == f"{SVC}-selfsigned"]
    assert signed == [f"{SVC}-ca"]


def test_own_chain_injects_the_ca_certificate_not_the_serving_one() -> None:
    _, _, reg = _chain()
    assert reg["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/{SVC}-ca"}
    assert all("caBundle" not in h["clientConfig"] for h in reg["webhooks"])


def test_the_ca_lifetime_is_a_value() -> None:
    _, certs, _ = _chain("--set", "webhook.certificates.certManager.caDuration=43800h")
    assert certs[f"{SVC}-ca"]["spec"]["duration"] == "43800h"
    assert certs[SVC]["spec"]["duration"] == "2160h"


def test_a_user_issuer_gets_one_certificate_injected_from_itself() -> None:
    objs = render("cert-manager")
    assert not by_kind(objs, "Issuer")
    certs = _named(objs, "Certificate")
    assert set(certs) == {SVC}
    assert certs[SVC]["spec"]["issuerRef"] == {
        "name": "cluster-ca",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }
    reg = by_kind(objs, "MutatingWebhookConfiguration")[0]
    assert reg["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/{SVC}"}


def test_a_renew_before_not_shorter_than_the_duration_is_refused_at_render() -> None:
    # cert-manager rejects such a Certificate: nothing would be issued
    with pytest.raises(HelmFailed, match=r"renewBefore \(2160h\) must be shorter than .*duration \(2160h\)"):
        render(None, *OWN, "--set", "webhook.certificates.certManager.renewBefore=2160h")
    with pytest.raises(HelmFailed, match=r"renewBefore \(90m\) must be shorter than .*duration \(1h30m\)"):
        render(
            None,
            *OWN,
            "--set",
            "webhook.certificates.certManager.duration=1h30m",
            "--set",
            "webhook.certificates.certManager.renewBefore=90m",
        )


def test_a_renew_before_shorter_than_the_duration_in_mixed_units_renders() -> None:
    _, certs, _ = _chain(
        "--set",
        "webhook.certificates.certManager.duration=1h30m",
        "--set",
        "webhook.certificates.certManager.renewBefore=89m59.5s",
    )
    assert (certs[SVC]["spec"]["duration"], certs[SVC]["spec"]["renewBefore"]) == ("1h30m", "89m59.5s")


def test_an_issuer_ref_without_a_name_is_refused_at_render() -> None:
    with pytest.raises(HelmFailed, match=r"webhook\.certificates\.certManager\.issuerRef\.name is required"):
        render(None, *OWN, "--set", "webhook.certificates.certManager.issuerRef.kind=ClusterIssuer")
