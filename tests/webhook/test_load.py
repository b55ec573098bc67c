"""Bounded load test: 64 concurrent clients over TLS on loopback for 60 s (DRA_WEBHOOK_LOAD_SECONDS),
with a certificate rotation and a policy reload during the run, and zero errors."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import ssl
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from dra_bridge.webhook.certs import write_certs
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.runtime import Runtime, watch_policy
from dra_bridge.webhook.server import make_app, reload_loop
from dra_bridge.webhook.tls import TlsReloader
from tests.factories import make_pod
from tests.webhook.conftest import FakeEnsurer, body, make_admission_review

SECONDS = float(os.environ.get("DRA_WEBHOOK_LOAD_SECONDS", "60"))
CONCURRENCY = 64
pytestmark = [pytest.mark.load, pytest.mark.timeout(SECONDS + 90)]


async def test_sixty_seconds_at_concurrency_64_with_rotation_and_reload_has_zero_errors(tmp_path: Path) -> None:
    old = write_certs(tmp_path / "old", "dra", "webhook", ("127.0.0.1",))
    new = write_certs(tmp_path / "new", "dra", "webhook", ("127.0.0.1",))
    live_cert, live_key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(old.cert, live_cert)
    shutil.copy(old.key, live_key)
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults: {onError: admit-unchanged}\n")
    tls = TlsReloader(live_cert, live_key)
    runtime = Runtime("resource.k8s.io/v1", policy=watch_policy(policy), tls=tls)
    admitter = Admitter(runtime.context, FakeEnsurer(), runtime.metrics)
    runner = web.AppRunner(make_app(runtime, admitter, [functools.partial(reload_loop, runtime, 0.1)]), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls.context)
    await site.start()
    url = f"https://127.0.0.1:{runner.addresses[0][1]}/mutate/enforce"
    ctx = ssl.create_default_context(cafile=str(old.ca_cert))
    ctx.load_verify_locations(cafile=str(new.ca_cert))
    payload = body(make_admission_review(make_pod(gpus=2)))
    errors: list[str] = []
    served = 0
    deadline = time.monotonic() + SECONDS

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal served
        while time.monotonic() < deadline:
            try:
                async with session.post(url, data=payload, headers={"Content-Type": "application/json"}) as resp:
                    answer = await resp.json()
                    if resp.status != 200 or "patch" not in answer["response"]:
                        errors.append(f"{resp.status} {str(answer)[:200]}")
                served += 1
            except (aiohttp.ClientError, OSError, ssl.SSLError) as exc:
                errors.append(repr(exc))

    async def churn() -> None:
        await asyncio.sleep(SECONDS / 3)
        shutil.copy(new.key, live_key)  # the reloader may see the new key before the new certificate:
        shutil.copy(new.cert, live_cert)  # it keeps the old pair until both match
        await asyncio.sleep(SECONDS / 6)
        policy.write_text(
            "defaults: {onError: admit-unchanged}\nrules: [{name: other, match: {namespaces: [x]}, keepLegacy: true}]\n"
        )

    # Half the clients keep connections alive, half handshake on every request (so rotation is exercised).
    sessions = [
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=CONCURRENCY // 2, force_close=close))
        for close in (False, True)
    ]
    try:
        await asyncio.gather(churn(), *(worker(sessions[i % 2]) for i in range(CONCURRENCY)))
    finally:
        for s in sessions:
            await s.close()
        await runner.cleanup()
    assert errors == [], f"{len(errors)} errors of {served}: {errors[:5]}"
    assert tls.reloads == 2 and runtime.policy is not None and runtime.policy.reloads == 2
    assert runtime.context().policy.rules[0].name == "other"
    assert served > CONCURRENCY
    print(f"\nload: {served} reviews in {SECONDS:g}s ({served / SECONDS:.0f}/s), 0 errors")
