"""The image reference the chart renders (docs/design.md D48): nothing is published, so
``image.repository`` has no default and the chart refuses to render without it, saying how to
build and push the image; ``image.digest`` (sha256:<64 hex>) wins over the tag, as in
cert-manager's chart; ``global.imageRegistry``, else ``imageRegistry``, is prepended."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml

from tests.chart.render import CHART, REPOSITORY, HelmFailed, Obj, by_kind, render

SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
DEFAULTS: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
APP_VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
DIGEST = "sha256:" + "ab" * 32


def _images(objs: list[Obj]) -> set[str]:
    """The image of every container of the Deployment and the DaemonSets."""
    return {
        c["image"]
        for kind in ("Deployment", "DaemonSet")
        for w in by_kind(objs, kind)
        for c in w["spec"]["template"]["spec"]["containers"]
    }


def test_the_chart_has_no_repository_default() -> None:
    assert DEFAULTS["image"]["repository"] == ""
    assert DEFAULTS["image"]["digest"] == ""


def test_without_a_repository_the_chart_refuses_and_says_how_to_build_and_push() -> None:
    with pytest.raises(HelmFailed) as err:
        render(None, required=False)
    message = str(err.value)
    assert "image.repository is required" in message
    assert "docker build --build-arg BASE_IMAGE=" in message and "@sha256:" in message
    assert "hack/image.sh archive" in message and "skopeo copy oci-archive:" in message
    assert 'set image.repository=REGISTRY/dra-bridge; see the chart README, "The image"\n' in message
    readme = (CHART / "README.md").read_text()
    assert "\n## The image\n" in readme, "the section the message points at"


def test_the_tag_form_defaults_to_the_app_version() -> None:
    assert _images(render(None)) == {f"{REPOSITORY}:{APP_VERSION}"}
    assert _images(render(None, "--set", "image.tag=1.2.3")) == {f"{REPOSITORY}:1.2.3"}


def test_a_digest_wins_over_the_tag() -> None:
    objs = render(None, "--set", f"image.digest={DIGEST}", "--set", "image.tag=1.2.3")
    assert _images(objs) == {f"{REPOSITORY}@{DIGEST}"}


def test_the_registry_is_prepended_once() -> None:
    objs = render(None, "--set", "imageRegistry=r.example.com/", "--set", "image.repository=team/dra-bridge")
    assert _images(objs) == {f"r.example.com/team/dra-bridge:{APP_VERSION}"}


@pytest.mark.parametrize(
    "bad",
    ["sha256:" + "AB" * 32, "ab" * 32, "image.repository=r.example.com/dra-bridge@" + DIGEST],
    ids=["upper-case hex", "no algorithm", "digest in the repository"],
)
def test_helm_refuses_a_malformed_digest(bad: str) -> None:
    setting = bad if bad.startswith("image.") else f"image.digest={bad}"
    with pytest.raises(HelmFailed, match="values don't meet the specifications of the schema"):
        render(None, "--set", setting)


@pytest.mark.parametrize(
    ("key", "value", "valid"),
    [
        ("digest", DIGEST, True),
        ("digest", "", True),
        ("digest", "sha256:" + "ab" * 31, False),
        ("digest", "sha256:" + "ab" * 32 + "\n", False),
        ("digest", "sha512:" + "ab" * 64, False),
        ("digest", "ab" * 32, False),
        ("repository", "registry.example.com:5000/dra-bridge", True),
        ("repository", "dra-bridge@" + DIGEST, False),
    ],
    ids=["digest", "no digest", "short", "trailing newline", "sha512", "no algorithm", "port", "repo@digest"],
)
def test_the_schema_checks_the_image_values(key: str, value: str, valid: bool) -> None:
    values = {**DEFAULTS, "image": {**DEFAULTS["image"], key: value}}
    errors = list(jsonschema.Draft7Validator(SCHEMA).iter_errors(values))
    assert not errors if valid else errors, (key, value)


INJECTED_TAG = "1\n      hostPID: true\n      initContainers:\n        - name: x\n          image: busybox"


def test_a_tag_that_is_not_an_oci_tag_is_refused_not_pasted_into_the_pods() -> None:
    with pytest.raises(HelmFailed, match="values don't meet the specifications of the schema"):
        render(None, "--set-string", f"image.tag={INJECTED_TAG}")


def test_the_image_reference_is_quoted() -> None:
    # a registry value the schema leaves free: pasted unquoted, `a: b` would be a YAML mapping
    objs = render(None, "--set-string", "imageRegistry=r.example.com: x/")
    assert _images(objs) == {f"r.example.com: x/{REPOSITORY}:{APP_VERSION}"}
    for kind in ("Deployment", "DaemonSet"):
        for w in by_kind(objs, kind):
            assert "hostPID" not in w["spec"]["template"]["spec"]


@pytest.mark.parametrize(
    ("key", "value", "valid"),
    [
        ("tag", "", True),
        ("tag", "1.2.3", True),
        ("tag", "v1.2.3-rc.1_x", True),
        ("tag", "x" * 128, True),
        ("tag", "x" * 129, False),
        ("tag", ".1", False),
        ("tag", "1 2", False),
        ("tag", INJECTED_TAG, False),
        ("repository", "registry.example.com/team/dra-bridge", True),
        ("repository", "dra-bridge", True),
        ("repository", "registry.example.com/dra-bridge:latest", False),
        ("repository", "dra-bridge:latest", False),
        ("repository", "registry.example.com:5000/team/dra-bridge:1", False),
    ],
    ids=[
        "empty",
        "semver",
        "oci chars",
        "128",
        "129",
        "leading dot",
        "space",
        "injection",
        "path",
        "bare",
        "repo:tag",
        "bare:tag",
        "port and tag",
    ],
)
def test_the_schema_checks_the_tag_and_a_tag_in_the_repository(key: str, value: str, valid: bool) -> None:
    values = {**DEFAULTS, "image": {**DEFAULTS["image"], key: value}}
    errors = list(jsonschema.Draft7Validator(SCHEMA).iter_errors(values))
    assert not errors if valid else errors, (key, value)


def test_helm_refuses_a_tag_in_the_repository() -> None:
    with pytest.raises(HelmFailed, match="values don't meet the specifications of the schema"):
        render(None, "--set", "image.repository=reg.example.com/x:latest")
