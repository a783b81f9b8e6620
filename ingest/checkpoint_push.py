"""Checkpoints pushed by training jobs: validate the payload, then insert idempotently per (run, step).

The write lives in ingest because ingest owns ``Job`` and ``Checkpoint``. Validation happens before
any write and the write is one transaction, so a rejected push leaves nothing behind. The same step
pushed twice yields the first checkpoint unchanged (a retrying client is safe).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from .models import Checkpoint, Job

#: The fields a push may carry; anything else is rejected so typos do not silently drop data.
FIELDS = ("step", "time", "duration_seconds", "bytes", "path")
MAX_BIGINT = 2**63 - 1
MAX_PATH = 1000
#: Clocks on training nodes drift; a checkpoint further in the future than this is a bug.
MAX_FUTURE = timedelta(minutes=5)
#: Kubernetes names: a namespace is a DNS-1123 label, a Job name a DNS-1123 subdomain.
NAMESPACE_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class PayloadError(ValueError):
    """A push was rejected; ``field`` names the offending field (``body`` for the whole payload)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class RunNotFound(LookupError):
    """The run does not exist and the caller may not create it."""


@dataclass(frozen=True)
class CheckpointPush:
    """A validated push."""

    step: int
    time: datetime
    duration_seconds: float | None
    bytes: int | None
    path: str


@dataclass(frozen=True)
class PushResult:
    """The stored checkpoint and whether this push created it (and its run)."""

    checkpoint: Checkpoint
    created: bool
    run_created: bool


def _integer(payload: dict[str, Any], field: str, *, required: bool) -> int | None:
    value = payload.get(field)
    if value is None:
        if required:
            raise PayloadError(field, "is required")
        return None
    # bool is an int subclass in Python; JSON true is not a step number.
    if isinstance(value, bool) or not isinstance(value, int):
        raise PayloadError(field, "must be an integer")
    if not 0 <= value <= MAX_BIGINT:
        raise PayloadError(field, f"must be between 0 and {MAX_BIGINT}")
    return value


def _seconds(payload: dict[str, Any], field: str) -> float | None:
    value = payload.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PayloadError(field, "must be a number")
    if not math.isfinite(value) or value < 0:
        raise PayloadError(field, "must be a finite number >= 0")
    return float(value)


def _time(payload: dict[str, Any], now: datetime) -> datetime:
    value = payload.get("time")
    if value is None:
        return now
    if not isinstance(value, str):
        raise PayloadError("time", "must be an ISO-8601 string")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise PayloadError("time", "must be an ISO-8601 date-time") from exc
    if moment.tzinfo is None:  # no offset given: UTC, as Prometheus and Kubernetes speak
        moment = moment.replace(tzinfo=UTC)
    if moment > now + MAX_FUTURE:
        raise PayloadError("time", "is in the future")
    return moment


def _path(payload: dict[str, Any]) -> str:
    value = payload.get("path")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PayloadError("path", "must be a string")
    if len(value) > MAX_PATH:
        raise PayloadError("path", f"must be at most {MAX_PATH} characters")
    return value


def parse_push(payload: object, now: datetime | None = None) -> CheckpointPush:
    """Validate a decoded JSON body; raise ``PayloadError`` naming the first bad field."""
    if not isinstance(payload, dict):
        raise PayloadError("body", "must be a JSON object")
    unknown = sorted(str(key) for key in payload if key not in FIELDS)
    if unknown:
        raise PayloadError(unknown[0], "unknown field")
    step = _integer(payload, "step", required=True)
    assert step is not None
    return CheckpointPush(
        step=step,
        time=_time(payload, now or timezone.now()),
        duration_seconds=_seconds(payload, "duration_seconds"),
        bytes=_integer(payload, "bytes", required=False),
        path=_path(payload),
    )


def validate_run_name(namespace: str, name: str) -> None:
    """Kubernetes naming rules for a run about to be created from a push."""
    if not NAMESPACE_RE.match(namespace):
        raise PayloadError("namespace", "must be a Kubernetes namespace name")
    if not NAME_RE.match(name):
        raise PayloadError("name", "must be a Kubernetes Job name")


def _job(namespace: str, name: str, *, create_run: bool, now: datetime) -> tuple[Job, bool]:
    job = Job.objects.filter(namespace=namespace, name=name).first()
    if job is not None:
        return job, False
    if not create_run:
        raise RunNotFound(f"{namespace}/{name}")
    validate_run_name(namespace, name)
    return Job.objects.get_or_create(
        namespace=namespace,
        name=name,
        defaults={"state": Job.State.PENDING, "first_seen": now, "last_seen": now},
    )


def push_checkpoint(
    namespace: str, name: str, push: CheckpointPush, *, create_run: bool = False
) -> PushResult:
    """Store a pushed checkpoint once per (run, step); creates a pending run only if allowed."""
    with transaction.atomic():
        job, run_created = _job(namespace, name, create_run=create_run, now=timezone.now())
        checkpoint, created = Checkpoint.objects.get_or_create(
            job=job,
            step=push.step,
            defaults={
                "ts": push.time,
                "duration_seconds": push.duration_seconds,
                "bytes": push.bytes,
                "path": push.path,
                "source": Checkpoint.Source.API,
            },
        )
    return PushResult(checkpoint=checkpoint, created=created, run_created=run_created)
