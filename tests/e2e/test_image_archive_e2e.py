"""``hack/image.sh archive OUT`` writes the image the tests run as an OCI archive a user pushes
with a standard tool (docs/design.md D47): the OCI image layout (``oci-layout``, ``index.json``
naming one image tagged with the version, content-addressed blobs whose sha256 is their name),
the image's config (user 65532, the commands on PATH), and skopeo reads it as
``oci-archive:OUT`` and copies it as it would to a registry (to a ``dir:`` destination here:
no registry is reachable). Reuses the image ``hack/image.sh build`` made (CI builds it first);
needs root, as the build does."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.podcluster import IMAGE_SCRIPT, ImageMissing, find_image

pytestmark = pytest.mark.e2e


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="module")
def image_env() -> dict[str, str]:
    if os.geteuid() != 0:
        pytest.skip("hack/image.sh needs root")
    try:
        return find_image()[1]
    except ImageMissing as err:
        if _in_ci():
            pytest.fail(str(err), pytrace=False)
        pytest.skip(str(err))


def _blob(tar: tarfile.TarFile, digest: str) -> bytes:
    algorithm, hexdigest = digest.split(":", 1)
    member = tar.extractfile(f"blobs/{algorithm}/{hexdigest}")
    assert member is not None, digest
    data = member.read()
    assert hashlib.sha256(data).hexdigest() == hexdigest, f"blob {digest} does not hash to its name"
    return data


@pytest.mark.timeout(240)
def test_the_archive_is_an_oci_layout_that_skopeo_pushes(image_env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "dra-bridge.tar"
    proc = subprocess.run(
        ["bash", str(IMAGE_SCRIPT), "archive", str(out)], capture_output=True, text=True, timeout=200, check=False
    )
    assert proc.returncode == 0, proc.stderr
    version = image_env["IMAGE_VERSION"]
    assert f"skopeo copy oci-archive:{out} docker://REGISTRY/dra-bridge:{version}" in proc.stderr
    with tarfile.open(out) as tar:
        layout = json.loads(_member(tar, "oci-layout"))
        assert layout == {"imageLayoutVersion": "1.0.0"}
        index = json.loads(_member(tar, "index.json"))
        (entry,) = index["manifests"]
        assert entry["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
        assert entry["annotations"]["org.opencontainers.image.ref.name"] == version
        manifest: dict[str, Any] = json.loads(_blob(tar, entry["digest"]))
        config = json.loads(_blob(tar, manifest["config"]["digest"]))
        assert len(manifest["layers"]) == 2, "Debian, then the venv"
        for layer in manifest["layers"]:
            _blob(tar, layer["digest"])
    assert config["os"] == "linux" and config["architecture"] == "amd64"
    assert config["config"]["User"] == f"{image_env['IMAGE_USER']}:{image_env['IMAGE_USER']}"
    assert any(e.startswith("PATH=/opt/dra-bridge/bin:") for e in config["config"]["Env"])
    if shutil.which("skopeo") is None:
        if _in_ci():
            pytest.fail("skopeo is not installed (hack/image.sh installs it)", pytrace=False)
        return
    inspect = subprocess.run(
        ["skopeo", "inspect", f"oci-archive:{out}"], capture_output=True, text=True, timeout=60, check=False
    )
    assert inspect.returncode == 0, inspect.stderr
    assert json.loads(inspect.stdout)["Digest"] == entry["digest"]
    copy = subprocess.run(
        ["skopeo", "--insecure-policy", "copy", "-q", f"oci-archive:{out}", f"dir:{tmp_path / 'pushed'}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert copy.returncode == 0, copy.stderr
    assert (tmp_path / "pushed" / "manifest.json").is_file()


def _member(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.extractfile(name)
    assert member is not None, name
    return member.read()
