"""POST /api/v1/runs/<namespace>/<name>/checkpoints: the push API of training jobs."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.test import Client
from django.utils import timezone

from core.models import APIToken
from runs.models import Checkpoint, Job

pytestmark = pytest.mark.django_db
URL = "/api/v1/runs/team-a/llama-70b/checkpoints"
PAYLOAD = {"step": 1200, "time": "2026-03-02T10:15:00Z", "duration_seconds": 42.5,
           "bytes": 140_000_000_000, "path": "s3://ckpt/llama-70b/step-1200"}  # fmt: skip


@pytest.fixture
def job() -> Job:
    return Job.objects.create(namespace="team-a", name="llama-70b", state=Job.State.RUNNING)


def bearer(user: object, scope: str) -> dict[str, str]:
    _, raw = APIToken.issue(user, name=f"pytest-{scope}", scope=scope)
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def post(client: Client, body: object, headers: dict[str, str], url: str = URL) -> object:
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data=data, content_type="application/json", **headers)


def test_push_creates_the_checkpoint(client: Client, user: object, job: Job) -> None:
    response = post(client, PAYLOAD, bearer(user, APIToken.Scope.CHECKPOINTS))
    assert response.status_code == 201
    body = response.json()
    assert body["created"] is True and body["run_created"] is False
    assert body["checkpoint"] == {"step": 1200, "time": "2026-03-02T10:15:00+00:00", "duration_seconds": 42.5,
                                  "bytes": 140_000_000_000, "path": "s3://ckpt/llama-70b/step-1200",
                                  "source": "api"}  # fmt: skip
    stored = Checkpoint.objects.get(job=job)
    assert (
        stored.ts == datetime(2026, 3, 2, 10, 15, tzinfo=UTC)
        and stored.source == Checkpoint.Source.API
    )


def test_same_step_twice_is_one_checkpoint(client: Client, user: object, job: Job) -> None:
    headers = bearer(user, APIToken.Scope.CHECKPOINTS)
    assert post(client, PAYLOAD, headers).status_code == 201
    again = post(client, {**PAYLOAD, "path": "elsewhere"}, headers)
    assert again.status_code == 200
    assert (
        again.json()["created"] is False and again.json()["checkpoint"]["path"] == PAYLOAD["path"]
    )
    assert Checkpoint.objects.filter(job=job).count() == 1


def test_time_defaults_to_now_and_naive_times_are_utc(
    client: Client, user: object, job: Job
) -> None:
    headers = bearer(user, APIToken.Scope.CHECKPOINTS)
    before = timezone.now()
    assert post(client, {"step": 1}, headers).status_code == 201
    assert before <= Checkpoint.objects.get(step=1).ts <= timezone.now()
    assert post(client, {"step": 2, "time": "2026-03-02T10:00:00"}, headers).status_code == 201
    assert Checkpoint.objects.get(step=2).ts == datetime(2026, 3, 2, 10, tzinfo=UTC)


def test_no_token_is_401_and_writes_nothing(client: Client, job: Job) -> None:
    response = post(client, PAYLOAD, {})
    assert response.status_code == 401 and response["Content-Type"] == "application/json"
    assert not Checkpoint.objects.exists()


def test_session_without_token_is_401(client: Client, user: object, job: Job) -> None:
    client.force_login(user)
    assert post(client, PAYLOAD, {}).status_code == 401
    assert not Checkpoint.objects.exists()


def test_read_token_is_403_and_writes_nothing(client: Client, user: object, job: Job) -> None:
    response = post(client, PAYLOAD, bearer(user, APIToken.Scope.READ))
    assert response.status_code == 403 and "checkpoints" in response.json()["detail"]
    assert not Checkpoint.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "step"),
        ({"step": "12"}, "step"),
        ({"step": True}, "step"),
        ({"step": -1}, "step"),
        ({"step": 1.5}, "step"),
        ({"step": 1, "epoch": 3}, "epoch"),
        ({"step": 1, "time": "yesterday"}, "time"),
        ({"step": 1, "time": 1767225600}, "time"),
        ({"step": 1, "time": "2999-01-01T00:00:00Z"}, "time"),
        ({"step": 1, "duration_seconds": "42"}, "duration_seconds"),
        ({"step": 1, "duration_seconds": -1}, "duration_seconds"),
        ({"step": 1, "bytes": 1.5}, "bytes"),
        ({"step": 1, "bytes": -5}, "bytes"),
        ({"step": 1, "path": 7}, "path"),
        ({"step": 1, "path": "x" * 1001}, "path"),
        ([1, 2], "body"),
        ("not json", "body"),
    ],
)
def test_bad_payload_is_400_naming_the_field(
    client: Client, user: object, body: object, field: str
) -> None:
    # A create_runs token and an unknown run: even the run must not be created.
    response = post(client, body, bearer(user, APIToken.Scope.CREATE_RUNS))
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert not Checkpoint.objects.exists() and not Job.objects.exists()


def test_unknown_run_is_404_without_create_runs(client: Client, user: object) -> None:
    response = post(client, PAYLOAD, bearer(user, APIToken.Scope.CHECKPOINTS))
    assert response.status_code == 404
    assert not Job.objects.exists() and not Checkpoint.objects.exists()


def test_unknown_run_is_created_pending_with_create_runs(client: Client, user: object) -> None:
    response = post(client, PAYLOAD, bearer(user, APIToken.Scope.CREATE_RUNS))
    assert response.status_code == 201 and response.json()["run_created"] is True
    job = Job.objects.get(namespace="team-a", name="llama-70b")
    assert job.state == Job.State.PENDING and job.checkpoints.count() == 1


def test_created_run_names_must_be_kubernetes_names(client: Client, user: object) -> None:
    response = post(
        client,
        PAYLOAD,
        bearer(user, APIToken.Scope.CREATE_RUNS),
        url="/api/v1/runs/Team_A/x/checkpoints",
    )
    assert response.status_code == 400 and response.json()["field"] == "namespace"
    assert not Job.objects.exists()


def test_get_is_405(client: Client, user: object, job: Job) -> None:
    assert client.get(URL, **bearer(user, APIToken.Scope.CHECKPOINTS)).status_code == 405
