"""``dra-migrate report --policy``: each workload judged with the settings the webhook's policy
would apply in its namespace (translate/policy.py, shared with dra-webhook)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import yaml

from dra_bridge.migrate.cli import main

POLICY = {
    "apiVersion": "policy.dra-bridge.io/v1",
    "defaults": {"convert": True},
    "rules": [
        {"name": "frozen", "match": {"namespaces": ["legacy-*"]}, "convert": False},
        {"name": "aligned", "match": {"namespaces": ["train"], "ownerKinds": ["Job"]}, "alignment": "numa"},
    ],
}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def job(name: str, namespace: str, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
                    ],
                }
            }
        },
    }


def write(path: Path, *docs: Any) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def report(tmp: Path, policy: str | None) -> dict[str, dict[str, Any]]:
    f = write(tmp / "in.yaml", job("a", "legacy-x", 1), job("b", "train", 2), job("c", "other", 2))
    code, out, err = run("report", "-f", f, "-o", "json", "--no-capacity", *(["--policy", policy] if policy else []))
    assert code == 0, err
    return {w["name"]: w for w in json.loads(out)["workloads"]}


def test_policy_rules_apply_per_namespace_and_owner(tmp_path: Path) -> None:
    plain = report(tmp_path, None)
    assert plain["a"]["path"] == "needs-conversion" and plain["b"]["alignment"]["status"] == "lost"
    assert plain["a"]["policy"] is None
    judged = report(tmp_path, write(tmp_path / "policy.yaml", POLICY))
    assert judged["a"]["policy"] == {"rule": "frozen", "convert": False}
    assert judged["a"]["path"] == "blocked" and "convert: false" in judged["a"]["pathReason"]
    assert judged["b"]["policy"] == {"rule": "aligned", "convert": True}
    assert judged["b"]["alignment"]["status"] == "kept"
    assert judged["c"]["policy"] == {"rule": "", "convert": True} and judged["c"]["alignment"]["status"] == "lost"


def test_policy_configmap_manifest_is_read(tmp_path: Path) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "dra-webhook-policy"},
        "data": {"policy.yaml": yaml.safe_dump(POLICY)},
    }
    judged = report(tmp_path, write(tmp_path / "cm.yaml", cm))
    assert judged["a"]["policy"] == {"rule": "frozen", "convert": False}


def test_bad_policy_is_an_input_error_naming_the_key(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", {"rules": [{"match": {"namespace": ["x"]}}]})
    f = write(tmp_path / "in.yaml", job("a", "x", 1))
    code, out, err = run("report", "-f", f, "--policy", bad)
    assert code == 1 and out == "" and "rules[0].match.namespace: unknown key" in err and "Traceback" not in err


def test_convert_takes_the_policy_too(tmp_path: Path) -> None:
    f = write(tmp_path / "in.yaml", job("a", "legacy-x", 1), job("c", "other", 1))
    code, out, err = run("convert", "-f", f, "--policy", write(tmp_path / "policy.yaml", POLICY))
    assert code == 0, err
    docs = {d["metadata"]["name"]: d for d in yaml.safe_load_all(out) if d and d.get("kind") == "Job"}

    def limits(d: dict[str, Any]) -> Any:
        return d["spec"]["template"]["spec"]["containers"][0].get("resources", {})

    assert "nvidia.com/gpu" in json.dumps(limits(docs["a"])) and "resourceClaims" not in json.dumps(docs["a"])
    assert "resourceClaims" in json.dumps(docs["c"])


def test_a_missing_policy_file_fails_before_the_cluster_is_read(tmp_path: Path) -> None:
    # a kubeconfig whose server does not answer: reading the cluster first would fail on that
    kubeconfig = write(
        tmp_path / "kubeconfig",
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        },
    )
    code, out, err = run("report", "--kubeconfig", kubeconfig, "--policy", str(tmp_path / "missing.yaml"))
    assert (code, out) == (1, "")
    assert "missing.yaml: cannot read" in err and "127.0.0.1:1" not in err, err
