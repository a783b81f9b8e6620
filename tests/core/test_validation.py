"""core.validation (bounds of external input) and core.middleware (clean requests, JSON API errors)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.test import Client

from core.models import APIToken
from core.validation import (
    InputError,
    check_json_strings,
    check_number,
    check_text,
    check_time,
    parse_time,
)
from runs.models import Checkpoint, Job

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CHECKPOINTS = "/api/v1/runs/team-a/llama/checkpoints"


def refused(call: object, *args: object, **kwargs: object) -> tuple[str, str]:
    with pytest.raises(InputError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    return caught.value.field, caught.value.detail


def test_times_are_bounded_to_2000_until_a_day_ahead() -> None:
    assert parse_time("2000-01-01T00:00:00Z", "t", now=NOW) == datetime(2000, 1, 1, tzinfo=UTC)
    assert parse_time("2026-06-02T13:00:00+01:00", "t", now=NOW) == datetime(
        2026, 6, 2, 12, tzinfo=UTC
    )
    assert parse_time("2026-06-01T12:00:00", "t", now=NOW) == NOW  # no offset: UTC
    bounds = "must lie between 2000-01-01 and now + 1 day"
    assert refused(parse_time, "1999-12-31T23:59:59Z", "t", now=NOW) == ("t", bounds)
    assert refused(parse_time, "0001-01-01T00:00:00+01:00", "t", now=NOW) == ("t", bounds)
    assert refused(parse_time, "9999-12-31T23:59:59Z", "t", now=NOW) == ("t", bounds)
    assert refused(parse_time, "2026-06-02T12:00:01Z", "t", now=NOW) == ("t", bounds)
    offset = "must be an ISO-8601 date-time with an offset within ±24:00"
    assert refused(parse_time, "2026-01-01T00:00:00+99:00", "t", now=NOW) == ("t", offset)
    assert refused(parse_time, "2026-01-01T00:00:00-99:00", "t", now=NOW) == ("t", offset)
    assert refused(parse_time, "2026-01-01\x00", "t", now=NOW) == (
        "t",
        "must not contain NUL characters",
    )
    assert refused(parse_time, 1e300, "t", now=NOW) == ("t", "must be an ISO-8601 date-time string")
    naive = datetime(2026, 1, 1)
    assert refused(check_time, naive, "t", now=NOW) == (
        "t",
        "needs a time zone (e.g. 2026-01-31T12:00:00Z)",
    )
    assert check_time(NOW, "t", now=NOW, max_future=timedelta(0)) == NOW


def test_numbers_must_be_finite_and_bounded() -> None:
    assert check_number(42.5, "d") == 42.5
    detail = "must be a finite number between 0 and 3.1536e+08"
    for bad in (1e300, float("inf"), float("nan"), -1):
        assert refused(check_number, bad, "d") == ("d", detail)
    assert refused(check_number, True, "d") == ("d", "must be a number")
    assert refused(check_number, "5", "d") == ("d", "must be a number")


def test_strings_refuse_nul_surrogates_and_overlength() -> None:
    assert check_text("gpu-001", "s", max_length=7) == "gpu-001"
    assert refused(check_text, "a\x00b", "s", max_length=10) == (
        "s",
        "must not contain NUL characters",
    )
    assert refused(check_text, "a\ud800b", "s", max_length=10) == (
        "s",
        "must not contain unpaired surrogates (not valid Unicode)",
    )
    assert refused(check_text, "x" * 8, "s", max_length=7) == ("s", "must be at most 7 characters")
    assert refused(check_text, "  ", "s", max_length=7, required=True) == ("s", "must not be empty")
    assert check_text("\U0001f600", "s", max_length=1) == "\U0001f600"  # a paired surrogate is fine


def test_json_documents_are_checked_everywhere_and_depth_is_bounded() -> None:
    check_json_strings({"a": [{"b": "fine"}]})
    assert refused(check_json_strings, {"a": [{"b": "x\x00"}]}) == (
        "a[0].b",
        "must not contain NUL characters",
    )
    assert refused(check_json_strings, {"\ud800": 1}) == (
        "body",
        "must not contain unpaired surrogates (not valid Unicode)",
    )
    deep: object = "x"
    for _ in range(20):
        deep = [deep]
    assert refused(check_json_strings, deep)[1] == "nested deeper than 8 levels"


@pytest.fixture
def push_headers(db: None, user: object) -> dict[str, str]:
    Job.objects.create(namespace="team-a", name="llama", state=Job.State.RUNNING)
    _, raw = APIToken.issue(user, scope=APIToken.Scope.CHECKPOINTS)
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


@pytest.mark.parametrize(
    ("body", "field", "detail"),
    [
        ({"step": 1, "time": "0001-01-01T00:00:00+01:00"}, "time",
         "must lie between 2000-01-01 and now + 0.00347222 days"),
        ({"step": 1, "duration_seconds": 1e300}, "duration_seconds",
         "must be a finite number between 0 and 3.1536e+08"),
        ({"step": 1, "path": "s3://x\x00"}, "path", "must not contain NUL characters"),
        ({"step": 1, "path": "s3://\ud800"}, "path",
         "must not contain unpaired surrogates (not valid Unicode)"),
        ({"step": 1, "time": "2026-01-01T00:00:00+99:00"}, "time",
         "must be an ISO-8601 date-time with an offset within ±24:00"),
    ],
)  # fmt: skip
def test_a_bad_checkpoint_push_is_400_and_nothing_is_written(
    client: Client, push_headers: dict[str, str], body: dict, field: str, detail: str
) -> None:
    response = client.post(CHECKPOINTS, json.dumps(body), "application/json", **push_headers)
    assert (response.status_code, response.json()) == (
        400,
        {"error": "invalid", "field": field, "detail": detail},
    )
    assert Checkpoint.objects.count() == 0


def test_a_10_mb_push_is_413_json(client: Client, push_headers: dict[str, str]) -> None:
    body = json.dumps({"step": 1, "path": "x" * 10_000_000})
    response = client.post(CHECKPOINTS, body, "application/json", **push_headers)
    assert (response.status_code, response.json()) == (
        413,
        {"error": "invalid", "field": "body", "detail": "must be at most 65536 bytes"},
    )
    assert Checkpoint.objects.count() == 0


@pytest.mark.django_db
def test_nul_in_an_api_path_or_parameter_is_400_json(logged_in_client: Client) -> None:
    path = logged_in_client.get("/api/v1/nodes/gpu%00x")
    assert (path.status_code, path.json()) == (
        400,
        {"error": "invalid", "field": "path", "detail": "must not contain NUL characters"},
    )
    query = logged_in_client.get("/api/v1/heatmap?metric=ib%00tx")
    assert (query.status_code, query.json()) == (
        400,
        {"error": "invalid", "field": "metric", "detail": "must not contain NUL characters"},
    )
    long = logged_in_client.get("/api/v1/alerts?node=" + "x" * 1001)
    assert long.json() == {
        "error": "invalid",
        "field": "node",
        "detail": "must be at most 1000 characters",
    }
    page = logged_in_client.get("/nodes/gpu%00x/")
    assert (page.status_code, page["Content-Type"], page.content) == (
        400,
        "text/plain",
        b"Bad request: path: must not contain NUL characters",
    )


@pytest.mark.django_db
def test_every_api_error_is_json(logged_in_client: Client, staff_user: object) -> None:
    missing = logged_in_client.get("/api/v1/no-such-endpoint")
    assert (missing.status_code, missing.json()) == (
        404,
        {"error": "not_found", "detail": "Not Found"},
    )
    wrong_method = logged_in_client.post("/api/v1/alerts")
    assert (wrong_method.status_code, wrong_method.json(), wrong_method["Allow"]) == (
        405,
        {"error": "method_not_allowed", "detail": "Method Not Allowed"},
        "GET",
    )
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(staff_user)
    refused_csrf = csrf.post("/api/v1/silences", "{}", "application/json")
    assert (refused_csrf.status_code, refused_csrf.json()) == (
        403,
        {"error": "forbidden", "detail": "CSRF verification failed: CSRF cookie not set."},
    )


@pytest.mark.django_db
def test_a_server_error_under_api_is_json(user: object) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    with mock.patch("alerts.api_alerts.filtered", side_effect=RuntimeError("boom")):
        response = client.get("/api/v1/alerts")
    assert (response.status_code, response.json()) == (
        500,
        {"error": "server_error", "detail": "Internal Server Error"},
    )
