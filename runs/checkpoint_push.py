"""Checkpoints pushed by training jobs: validate the payload, then insert idempotently per (run, step).

The write lives in runs, which owns ``Job`` and ``Checkpoint``. Validation happens before any
write and the write is one transaction, so a rejected push leaves nothing behind. The same step
pushed twice yields the first checkpoint unchanged (a retrying client is safe).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import transaction
from django.utils import timezone

from core.validation import (
    MAX_DURATION_SECONDS,
    InputError,
    check_integer,
    check_number,
    check_text,
    parse_time,
)

from .models import Checkpoint, Job

#: The fields a push may carry; anything else is rejected so typos do not silently drop data.
FIELDS = ("step", "time", "duration_seconds", "bytes", "path")
MAX_BIGINT = 2**63 - 1
MAX_PATH = 1000  # Checkpoint.path's column width
T = TypeVar("T")
#: Clocks on training nodes drift; a checkpoint further in the future than this is a bug.
MAX_FUTURE = timedelta(minutes=5)
#: Kubernetes names: a namespace is a DNS-1123 label, a Job name a DNS-1123 subdomain.
NAMESPACE_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class PayloadError(InputError):
    """A push was rejected; ``field`` names the offending field (``body`` for the whole payload)."""

    def __init__(self, field: str, message: str, status: int = 400) -> None:
        super().__init__(field, message, status)
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


def _checked(check: Callable[[], T]) -> T:
    """Run a ``core.validation`` check, re-raised as this module's ``PayloadError``."""
    try:
        return check()
    except PayloadError:
        raise
    except InputError as exc:
        raise PayloadError(exc.field, exc.detail, exc.status) from None


def _integer(payload: dict[str, Any], field: str, *, required: bool) -> int | None:
    value = payload.get(field)
    if value is None:
        if required:
            raise PayloadError(field, "is required")
        return None
    return _checked(lambda: check_integer(value, field, minimum=0, maximum=MAX_BIGINT))


def _seconds(payload: dict[str, Any], field: str) -> float | None:
    value = payload.get(field)
    if value is None:
        return None
    return _checked(lambda: check_number(value, field, maximum=MAX_DURATION_SECONDS))


def _time(payload: dict[str, Any], now: datetime) -> datetime:
    value = payload.get("time")
    if value is None:
        return now
    return _checked(lambda: parse_time(value, "time", now=now, max_future=MAX_FUTURE))


def _path(payload: dict[str, Any]) -> str:
    value = payload.get("path")
    if value is None:
        return ""
    return _checked(lambda: check_text(value, "path", max_length=MAX_PATH))


def parse_push(payload: object, now: datetime | None = None) -> CheckpointPush:
    """Validate a decoded JSON body; raise ``PayloadError`` naming the first bad field."""
    if not isinstance(payload, dict):
        raise PayloadError("body", "must be a JSON object")
    unknown = sorted(str(key) for key in payload if key not in FIELDS)
    if unknown:
        raise PayloadError(ascii(unknown[0])[1:-1][:100], "unknown field")
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
