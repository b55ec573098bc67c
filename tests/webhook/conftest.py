"""Factories and fixtures for webhook tests: reviews, a fake template ensurer, the app (pods: tests/factories.py)."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from dra_bridge.webhook.errors import TemplateError
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.review import AdmissionResponse, AdmissionReview
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"


def example(name: str, kind: str = "Pod") -> dict[str, Any]:
    """The first object of ``kind`` in an example manifest."""
    for doc in yaml.safe_load_all((EXAMPLES / name).read_text()):
        if doc and doc.get("kind") == kind:
            return dict(doc)
    raise LookupError(f"{name} has no {kind}")


def make_admission_review(
    obj: Any,
    *,
    operation: str = "CREATE",
    dry_run: bool = False,
    namespace: str = "team-a",
    kind: str = "Pod",
    uid: str | None = None,
) -> dict[str, Any]:
    """An AdmissionReview admission.k8s.io/v1 request for ``obj``."""
    group, version = ("", "v1") if kind == "Pod" else ("apps", "v1")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid or str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "tester"},
            "object": copy.deepcopy(obj),
            "oldObject": None,
            "dryRun": dry_run,
        },
    }


class FakeEnsurer:
    """Records ensure calls; ``fail`` makes every call raise TemplateError."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[dict[str, Any]], bool]] = []
        self.created: dict[tuple[str, str], dict[str, Any]] = {}
        self.fail: str = ""

    async def ensure(self, templates: Sequence[Mapping[str, Any]], *, dry_run: bool) -> int:
        self.calls.append(([dict(t) for t in templates], dry_run))
        if self.fail:
            raise TemplateError(self.fail)
        if dry_run:
            return 0
        n = 0
        for t in templates:
            key = (t["metadata"]["namespace"], t["metadata"]["name"])
            if key not in self.created:
                self.created[key] = dict(t)
                n += 1
        return n


class FakeAudit:
    """Collects audit Events instead of posting them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Mapping[str, Any], str]] = []

    def emit(self, namespace: str, owner: Mapping[str, Any], message: str) -> None:
        self.events.append((namespace, owner, message))


@pytest.fixture
def ensurer() -> FakeEnsurer:
    return FakeEnsurer()


@pytest.fixture
def audit() -> FakeAudit:
    return FakeAudit()


@pytest.fixture
def runtime() -> Runtime:
    return Runtime("resource.k8s.io/v1", require_tls=False)


@pytest.fixture
def app(runtime: Runtime, ensurer: FakeEnsurer, audit: FakeAudit) -> web.Application:
    return make_app(runtime, Admitter(runtime.context, ensurer, runtime.metrics, audit))


def write_kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig at ``path`` for ``server`` (a token user; https without verification)."""
    tls = ", insecure-skip-tls-verify: true" if server.startswith("https:") else ""
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}"{tls}}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    return path


def body(review: Any) -> bytes:
    return json.dumps(review).encode()


def response_of(answer: AdmissionReview | dict[str, str]) -> AdmissionResponse:
    """The AdmissionResponse in an :meth:`Admitter.handle` answer; fails on an error body."""
    response = answer.get("response")
    assert isinstance(response, dict), answer
    return response
