"""A watched file that cannot be loaded never wedges the webhook (issue 20, item 4).

Whatever is wrong with the newest file (a value of the wrong type, a parser that raises something
unexpected, a file larger than the bound, a FIFO or a link to ``/dev/zero``, a half-written file)
the last good version stays in force, one line is logged, ``dra_webhook_config_valid{file}`` is 0
and ``/readyz`` says why; the reload loop keeps running (its checks in a worker thread), and if it
stops or hangs, ``/healthz`` fails.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.reload import MAX_FILE_BYTES, Watched
from dra_bridge.webhook.runtime import Runtime, watch_catalog, watch_policy
from dra_bridge.webhook.server import make_app, reload_loop
from tests.webhook.conftest import FakeEnsurer

Client = TestClient[web.Request, web.Application]
MakeClient = Callable[[web.Application], Awaitable[Client]]
GOOD_CATALOG = "apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\nmigProfileAliases: [[3g.40gb, 3g.41gb]]\n"


def _errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def _valid(runtime: Runtime, name: str) -> str:
    text = runtime.metrics.render().decode()
    return next(line for line in text.splitlines() if line.startswith(f'dra_webhook_config_valid{{file="{name}"}}'))


def test_a_catalog_edited_to_a_number_keeps_the_last_good_one_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text(GOOD_CATALOG)
    runtime = Runtime("resource.k8s.io/v1", catalog=watch_catalog(path), require_tls=False)
    runtime.check_files()
    assert runtime.context().catalog.aliases("3g.41gb") == ("3g.39gb", "3g.40gb", "3g.41gb")
    path.write_text("apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\nmigProfileAliases: 5\n")
    caplog.clear()
    runtime.check_files()
    runtime.check_files()  # the same bad file again: still one line
    assert runtime.context().catalog.aliases("3g.41gb") == ("3g.39gb", "3g.40gb", "3g.41gb")
    errors = _errors(caplog)
    assert len(errors) == 1 and "migProfileAliases" in errors[0] and str(path) in errors[0], errors
    assert _valid(runtime, "catalog").endswith(" 0.0")
    ready, detail = runtime.readiness()
    assert ready is True and "migProfileAliases: must be a list" in detail["catalog"], detail


def test_a_parser_that_raises_anything_is_a_refused_file_not_a_dead_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text("one")
    calls: list[str] = []

    def parse(text: str, _source: str) -> str:
        calls.append(text)
        if text != "one":
            raise TypeError("'int' object is not iterable")
        return text

    watched: Watched[str] = Watched(path, parse)
    assert watched.check() is True
    path.write_text("two")
    assert watched.check() is False
    assert watched.value == "one"
    assert "TypeError" in watched.error and str(path) in watched.error, watched.error
    assert len(_errors(caplog)) == 1


@pytest.mark.parametrize("kind", ["too-large", "fifo", "dev-zero", "directory", "half-written", "not-utf8"])
def test_an_unloadable_file_is_refused_quickly_keeping_the_last_good_policy(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("defaults: {onError: deny}\n")
    runtime = Runtime("resource.k8s.io/v1", policy=watch_policy(path), require_tls=False)
    runtime.check_files()
    path.unlink()
    if kind == "too-large":
        with path.open("wb") as fh:
            fh.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "half-written":
        path.write_text("defaults: {onError: adm")
    else:
        path.write_bytes(b"defaults: {onError: \xff}\n")
    caplog.clear()
    worker = threading.Thread(target=runtime.check_files, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive() and kind == "fifo":  # today's code blocks opening it: let it go
        with open(path, "wb"):
            pass
    assert not worker.is_alive(), "the check did not return"
    assert runtime.context().policy.defaults.on_error == "deny"
    assert _valid(runtime, "policy").endswith(" 0.0")
    errors = _errors(caplog)
    assert len(errors) == 1 and str(path) in errors[0] and "\n" not in errors[0], errors
    assert "refused" in runtime.readiness()[1]["policy"]


async def test_the_reload_loop_checks_in_a_worker_thread_and_survives_an_exception(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)
    threads: list[int] = []

    def check() -> None:
        threads.append(threading.get_ident())
        if len(threads) == 1:
            raise RuntimeError("boom")

    runtime.check_files = check  # type: ignore[method-assign]
    stop = asyncio.Event()
    task = asyncio.create_task(reload_loop(runtime, 0.01, stop))
    for _ in range(500):
        if len(threads) >= 3:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert len(threads) >= 3, "the loop stopped after an exception"
    assert threading.get_ident() not in threads, "a check ran on the event loop"
    errors = _errors(caplog)
    assert len(errors) == 1 and "RuntimeError: boom" in errors[0], errors


class _Fatal(BaseException):
    """Something no ``except Exception`` catches: the loop's task ends."""


async def _health(aiohttp_client: MakeClient, runtime: Runtime, interval: float) -> Client:
    app = make_app(
        runtime,
        Admitter(runtime.context, FakeEnsurer(), runtime.metrics),
        [lambda stop: reload_loop(runtime, interval, stop)],
    )
    return await aiohttp_client(app)


async def test_liveness_fails_once_the_reload_loop_has_died(aiohttp_client: MakeClient) -> None:
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)
    died = asyncio.Event()

    def check() -> None:
        died.set()
        raise _Fatal("the loop ends")

    runtime.check_files = check  # type: ignore[method-assign]
    client = await _health(aiohttp_client, runtime, 0.01)
    await asyncio.wait_for(died.wait(), 5)
    for _ in range(200):
        resp = await client.get("/healthz")
        if resp.status != 200:
            break
        await asyncio.sleep(0.01)
    assert resp.status == 503
    assert "reload" in await resp.text()


async def test_liveness_fails_while_a_check_hangs(aiohttp_client: MakeClient) -> None:
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)
    runtime.reloader.stale_after = 0.3
    release = threading.Event()
    runtime.check_files = lambda: (release.wait(10), None)[1]  # type: ignore[method-assign]
    client = await _health(aiohttp_client, runtime, 0.01)
    assert (await client.get("/healthz")).status == 200
    await asyncio.sleep(0.6)
    resp = await client.get("/healthz")
    release.set()
    assert resp.status == 503 and "no file check finished" in await resp.text()


async def test_liveness_stays_up_while_the_loop_runs(aiohttp_client: MakeClient) -> None:
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)
    runtime.reloader.stale_after = 0.3
    client = await _health(aiohttp_client, runtime, 0.01)
    await asyncio.sleep(0.6)
    assert (await client.get("/healthz")).status == 200


def test_a_bad_catalog_at_start_is_not_ready_naming_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text("apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\nmigProfileAliases: 5\n")
    runtime = Runtime("resource.k8s.io/v1", catalog=watch_catalog(path, strict=False), require_tls=False)
    runtime.check_files()
    ready, detail = runtime.readiness()
    assert ready is False and detail["ready"] is False
    assert str(path) in detail["catalog"] and "migProfileAliases" in detail["catalog"], detail
    path.write_text(GOOD_CATALOG)
    runtime.check_files()
    assert runtime.readiness()[0] is True
    assert _valid(runtime, "catalog").endswith(" 1.0")


async def test_pods_are_admitted_unchanged_while_no_policy_file_loaded(
    aiohttp_client: MakeClient, tmp_path: Path
) -> None:
    from tests.factories import make_pod
    from tests.webhook.conftest import body, make_admission_review

    path = tmp_path / "policy.yaml"
    path.write_text("rules: 3\n")
    runtime = Runtime("resource.k8s.io/v1", policy=watch_policy(path, strict=False), require_tls=False)
    client = await aiohttp_client(make_app(runtime, Admitter(runtime.context, FakeEnsurer(), runtime.metrics)))
    review = body(make_admission_review(make_pod(gpus=1)))
    answer = (await (await client.post("/mutate/enforce", data=review)).json())["response"]
    assert answer["allowed"] is True and "patch" not in answer, answer
    assert (await client.get("/readyz")).status == 503
    path.write_text("defaults: {onError: deny}\n")
    runtime.check_files()
    answer = (await (await client.post("/mutate/enforce", data=review)).json())["response"]
    assert "patch" in answer, answer


async def test_a_serving_pair_replaced_by_a_link_to_dev_zero_keeps_the_old_pair(tmp_path: Path) -> None:
    import shutil

    from dra_bridge.webhook.certs import write_certs
    from dra_bridge.webhook.tls import TlsReloader

    first = write_certs(tmp_path / "a", "dra", "webhook", ("127.0.0.1",))
    second = write_certs(tmp_path / "b", "dra", "webhook", ("127.0.0.1",))
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(first.cert, cert)
    shutil.copy(first.key, key)
    tls = TlsReloader(cert, key)  # made on the running loop: swaps happen there
    runtime = Runtime("resource.k8s.io/v1", tls=tls)
    shutil.copy(second.key, key)
    shutil.copy(second.cert, cert)
    await asyncio.wait_for(asyncio.to_thread(runtime.check_files), 10)  # a check in a worker thread
    assert tls.reloads == 2 and tls.error == ""
    cert.unlink()
    cert.symlink_to("/dev/zero")
    await asyncio.wait_for(asyncio.to_thread(runtime.check_files), 10)
    assert tls.reloads == 2 and "not a regular file" in tls.error
    assert _valid(runtime, "tls").endswith(" 0.0")


def test_a_check_that_raises_marks_its_file_invalid_once_and_the_others_still_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults: {onError: deny}\n")
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(GOOD_CATALOG)
    runtime = Runtime("resource.k8s.io/v1", policy=watch_policy(policy), catalog=watch_catalog(catalog))
    assert runtime.catalog is not None

    def broken() -> bool:
        raise RuntimeError("a bug")

    runtime.catalog.check = broken  # type: ignore[method-assign]
    policy.write_text("defaults: {onError: admit-unchanged}\n")
    caplog.clear()
    runtime.check_files()
    runtime.check_files()
    assert runtime.context().policy.defaults.on_error == "admit-unchanged"
    assert _valid(runtime, "catalog").endswith(" 0.0") and _valid(runtime, "policy").endswith(" 1.0")
    errors = _errors(caplog)
    assert len(errors) == 1 and "catalog: check failed: RuntimeError: a bug" in errors[0], errors


async def test_a_client_ca_replaced_by_a_link_to_dev_zero_keeps_the_cas_in_force(tmp_path: Path) -> None:
    from dra_bridge.webhook.certs import write_certs
    from dra_bridge.webhook.tls import TlsReloader

    pair = write_certs(tmp_path / "a", "dra", "webhook", ("127.0.0.1",))
    callers = write_certs(tmp_path / "callers", "dra", "caller")
    client_ca = tmp_path / "client-ca.crt"
    client_ca.write_bytes(callers.ca_cert.read_bytes())
    tls = TlsReloader(pair.cert, pair.key, client_ca=client_ca)
    runtime = Runtime("resource.k8s.io/v1", tls=tls)
    client_ca.unlink()
    client_ca.symlink_to("/dev/zero")
    await asyncio.wait_for(asyncio.to_thread(runtime.check_files), 10)
    assert "client CA" in tls.error and "not a regular file" in tls.error, tls.error
    assert _valid(runtime, "tls").endswith(" 0.0")
    assert len(tls.context.get_ca_certs()) == 1  # the CA loaded at start is still trusted


@pytest.mark.parametrize("name", ["catalog", "policy"])
def test_a_watched_file_that_is_not_utf8_says_so_in_plain_words(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(b"apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\n# caf\xe9\n")
    watched = {"catalog": watch_catalog, "policy": watch_policy}[name](path, strict=False)
    runtime = Runtime("resource.k8s.io/v1", require_tls=False, **{name: watched})  # type: ignore[arg-type]
    runtime.check_files()
    ready, detail = runtime.readiness()
    assert ready is False
    assert str(path) in detail[name] and "not UTF-8 text (byte 0xe9 at offset 56)" in detail[name], detail
    assert "UnicodeDecodeError" not in detail[name] and "codec" not in detail[name], detail
