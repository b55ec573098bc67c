"""One error tree: statuses map to named errors, chained from the client's exception."""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from dra_bridge.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    NotFound,
    Unauthorized,
    Unavailable,
    from_api_exception,
    from_status,
    is_connection_failure,
)


@pytest.mark.parametrize(
    ("status", "reason", "cls"),
    [
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (409, "AlreadyExists", AlreadyExists),
        (410, "Expired", Gone),
        (422, "Invalid", Invalid),
        (400, "BadRequest", ApiError),
        (429, "TooManyRequests", Unavailable),
        (500, "InternalError", Unavailable),
        (503, "ServiceUnavailable", Unavailable),
    ],
    ids=lambda v: str(v) if not isinstance(v, type) else v.__name__,
)
def test_each_status_has_its_error(status: int, reason: str, cls: type[KubeError]) -> None:
    err = from_status("POST /x", status, {"kind": "Status", "reason": reason, "message": "why"})
    assert type(err) is cls and err.status == status and err.reason == reason
    assert str(err) == f"POST /x: {status} {reason}: why"


def test_already_exists_is_a_conflict_and_every_answer_is_a_kube_error() -> None:
    assert issubclass(AlreadyExists, Conflict) and issubclass(Conflict, ApiError) and issubclass(ApiError, KubeError)
    assert issubclass(Unavailable, KubeError) and not issubclass(Unavailable, ApiError)


def test_an_api_exception_body_gives_the_reason() -> None:
    exc = ApiException(status=409, reason="Conflict")
    exc.body = b'{"kind": "Status", "reason": "AlreadyExists", "message": "taken"}'  # what the client reads
    err = from_api_exception("POST /x", exc)
    assert isinstance(err, AlreadyExists) and "taken" in str(err)


def test_connection_failures_are_recognised() -> None:
    import aiohttp

    assert is_connection_failure(ConnectionRefusedError()) and is_connection_failure(TimeoutError())
    assert is_connection_failure(aiohttp.ServerDisconnectedError())
    assert not is_connection_failure(ValueError())
