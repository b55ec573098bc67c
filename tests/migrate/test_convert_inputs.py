"""``dra-migrate convert`` on inputs that must not pass silently: empty input, text that is not
UTF-8, live pods read back from the API server."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dra_bridge.migrate.cli import main
from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_OK
from tests.factories import make_pod

EXAMPLES = Path(__file__).parents[1] / "data" / "examples"


def run(*args: str, stdin: str | io.TextIOBase = "") -> tuple[int, str, str]:
    """``dra-migrate ARGS`` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    source = io.StringIO(stdin) if isinstance(stdin, str) else stdin
    code = main(list(args), stdin=source, stdout=out, stderr=err)  # type: ignore[arg-type]
    return code, out.getvalue(), err.getvalue()


def _empty_file(tmp: Path) -> str:
    (tmp / "empty.yaml").write_text("")
    return str(tmp / "empty.yaml")


def _only_separators(tmp: Path) -> str:
    (tmp / "blank.yaml").write_text("---\n# nothing rendered\n---\n")
    return str(tmp / "blank.yaml")


def _empty_dir(tmp: Path) -> str:
    (tmp / "d").mkdir()
    return str(tmp / "d")


def _dir_without_manifests(tmp: Path) -> str:
    (tmp / "d").mkdir()
    (tmp / "d" / "README.md").write_text("# not a manifest\n")
    (tmp / "d" / "values.txt").write_text("replicas: 2\n")
    return str(tmp / "d")


EMPTY = [
    pytest.param(_empty_file, id="empty-file"),
    pytest.param(_only_separators, id="only-separators"),
    pytest.param(_empty_dir, id="empty-dir"),
    pytest.param(_dir_without_manifests, id="dir-without-manifests"),
]


@pytest.mark.parametrize("make", EMPTY)
@pytest.mark.parametrize("fail_on", [[], ["--fail-on", "left-for-webhook"]], ids=["plain", "fail-on"])
def test_empty_input_exits_1_with_one_line_naming_the_source(make: object, fail_on: list[str], tmp_path: Path) -> None:
    source = make(tmp_path)  # type: ignore[operator]
    code, out, err = run("convert", "-f", source, *fail_on)
    assert (code, out) == (EXIT_ERROR, "")
    assert err.count("\n") == 1 and source in err and "--allow-empty" in err and "Traceback" not in err


def test_empty_stdin_exits_1() -> None:
    code, out, err = run("convert")
    assert (code, out) == (EXIT_ERROR, "") and "-: no Kubernetes objects" in err


def test_one_empty_source_among_others_is_named(tmp_path: Path) -> None:
    empty = _empty_dir(tmp_path)
    code, out, err = run("convert", "-f", str(EXAMPLES / "01-pod-limits-only-toleration.yaml"), "-f", empty)
    assert (code, out) == (EXIT_ERROR, "") and empty in err


@pytest.mark.parametrize("make", EMPTY)
def test_allow_empty_accepts_empty_input(make: object, tmp_path: Path) -> None:
    code, out, err = run("convert", "--allow-empty", "--fail-on", "left-for-webhook", "-f", make(tmp_path))  # type: ignore[operator]
    assert (code, out) == (EXIT_OK, "") and "no objects" in err


def test_non_utf8_file_is_named_and_said_not_to_be_utf8(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: caf\u00e9}\n".encode("latin-1"))
    code, out, err = run("convert", "-f", str(bad))
    assert (code, out) == (EXIT_ERROR, "")
    assert err.count("\n") == 1 and str(bad) in err and "not UTF-8 text" in err and "codec" not in err


def test_non_utf8_stdin_is_said_not_to_be_utf8() -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"kind: Pod\nmetadata: {name: \xff}\n"), encoding="utf-8")
    code, out, err = run("convert", stdin=stdin)
    assert (code, out) == (EXIT_ERROR, "") and "-: not UTF-8 text" in err and "Traceback" not in err


def test_live_pod_from_kubectl_get_is_kept_because_it_runs_not_because_of_node_name() -> None:
    pod = make_pod(nodeName="gpu-node-1")  # kubectl get pod -o yaml: bound, with a uid and a status
    pod["metadata"].update(uid="0b7c9e1e-7a43-4c8e-9d52-6f0c7f2b1a11", resourceVersion="4711")
    pod["status"] = {"phase": "Running"}
    code, out, err = run("convert", "-f", "-", stdin=json.dumps(pod))
    assert code == EXIT_OK and list(yaml.safe_load_all(out)) == [pod]
    assert "cannot change" in err and "convert its owner" in err
    assert "skips the scheduler" not in err


@pytest.mark.parametrize(
    ("items", "says"),
    [("null", "a List whose items are null"), ("[]", "a List whose items are empty")],
    ids=["items-null", "items-empty"],
)
@pytest.mark.parametrize("command", ["convert", "report"])
def test_a_list_without_items_is_said_to_be_one(items: str, says: str, command: str, tmp_path: Path) -> None:
    listed = tmp_path / "list.yaml"
    listed.write_text(f"apiVersion: v1\nkind: List\nitems: {items}\n", encoding="utf-8")
    code, out, err = run(command, "-f", str(listed))
    assert (code, out) == (EXIT_ERROR, "")
    assert f"{listed}: no Kubernetes objects ({says})" in err and "only comments" not in err, err
    code, out, err = run(command, "-f", str(tmp_path))
    assert (code, out) == (EXIT_ERROR, "")
    assert f"{tmp_path}: no Kubernetes objects (a directory whose manifest files hold no objects)" in err, err


def test_a_list_without_items_on_stdin_is_said_to_be_one() -> None:
    code, out, err = run("convert", "-f", "-", stdin="apiVersion: v1\nkind: List\nitems: null\n")
    assert (code, out) == (EXIT_ERROR, "") and "-: no Kubernetes objects (a List whose items are null)" in err, err


@pytest.mark.timeout(60)  # four processes of about a second each, more on a loaded machine
def test_a_custom_resource_converts_to_the_same_text_whatever_the_hash_seed() -> None:
    """A KServe InferenceService's converted fields come in the plan's order, not a set's: the
    output of ``--include-custom-resources`` is the same in every process (it is committed and
    diffed), its new fields after its own, ``resourceClaims`` before ``tolerations``."""
    source = Path(__file__).parents[1] / "data" / "custom-resources" / "kserve-inferenceservice.yaml"
    code = "import sys; from dra_bridge.migrate.cli import main; sys.exit(main(sys.argv[1:]))"
    outputs = set()
    for seed in ("0", "1", "2", "3"):
        done = subprocess.run(
            [sys.executable, "-c", code, "convert", "--include-custom-resources", "-f", str(source)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    service = next(d for d in yaml.safe_load_all(outputs.pop()) if d["kind"] == "InferenceService")
    predictor = list(service["spec"]["predictor"])
    assert predictor.index("resourceClaims") < predictor.index("tolerations")


@pytest.mark.parametrize(
    ("field", "value"),
    [("namespace", "5"), ("namespace", "[a]"), ("name", "7"), ("name", "{a: 1}")],
    ids=["namespace-number", "namespace-list", "name-number", "name-object"],
)
@pytest.mark.parametrize("kind", ["Pod", "Deployment"])
def test_an_object_whose_name_or_namespace_is_not_a_string_is_left_unchanged_and_said(
    field: str, value: str, kind: str, tmp_path: Path
) -> None:
    """ObjectMeta's ``name`` and ``namespace`` are strings: a template for namespace ``5`` (or a
    record naming pod ``7``) is one the API server refuses, so the object stays as it was and a
    finding names the field and the rule."""
    meta = {"name": "gpu", "namespace": "team-a", field: yaml.safe_load(value)}
    pod = make_pod()
    obj = (
        {**pod, "metadata": meta}
        if kind == "Pod"
        else {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {"template": {"metadata": {}, "spec": pod["spec"]}},
        }
    )
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(obj))
    code, out, err = run("convert", "-f", str(path))
    assert code == EXIT_OK, err
    assert list(yaml.safe_load_all(out)) == [obj]  # no template, the object as it came
    assert f"metadata.{field} must be a string (core/v1 schema)" in err and "unsupported" in err, err
