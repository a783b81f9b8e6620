"""Delivering outbox rows: atomic claims under a lease, one log row per attempt.

A row is claimed with one conditional UPDATE (pending and due, or sending with
an expired lease) that sets a fresh lease token. Only the holder of the
current token can finish the row, and a finished row (delivered or failed) is
never claimed again, so a delivered notification is never re-sent. A worker
that dies mid-send leaves its lease to expire: the row is then claimed once
more, and its unfinished attempt is logged as abandoned. A live sender never
loses its row: the request has a deadline (``HTTP_TIMEOUT_SECONDS``, the whole
request) and the lease is renewed every third of its length while the send is
in flight. Every attempt of one row carries the same delivery id
(``delivery_id()``), which receivers can de-duplicate on.
"""

from __future__ import annotations

import logging
import random
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import F, Q
from django.utils import timezone

from ..models import AttemptOutcome, DeliveryAttempt, NotificationChannel, Outbox, OutboxStatus
from ..transports import TransportError, transport_for
from ..transports.base import GONE_HINT
from . import metrics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    """A row held by this sender until ``token`` is replaced or the lease expires."""

    row: Outbox
    token: uuid.UUID
    attempt: DeliveryAttempt


@dataclass(frozen=True)
class Result:
    """What one delivery call did; ``retry_in`` is set when the row waits for another try."""

    outbox_id: int
    outcome: str
    retry_in: float | None = None


DELIVERY_NAMESPACE = uuid.UUID("6f0c52a4-3a43-4d0c-9a53-6b4f8a1f3c2e")


def lease_seconds() -> float:
    """How long a claim lasts without renewal (``ALERTS_NOTIFY_LEASE_SECONDS``)."""
    return float(settings.ALERTS_NOTIFY_LEASE_SECONDS)


def delivery_id(row: Outbox) -> str:
    """The row's delivery id: the same on every attempt, different for every notification."""
    return str(uuid.uuid5(DELIVERY_NAMESPACE, f"{settings.EXTERNAL_URL}|{row.key}"))


def _renew(outbox_id: int, token: uuid.UUID) -> bool:
    expires = timezone.now() + timedelta(seconds=lease_seconds())
    held = Outbox.objects.filter(id=outbox_id, lease_token=token, status=OutboxStatus.SENDING)
    return bool(held.update(lease_expires_at=expires))


@contextmanager
def lease_kept(held: Claim) -> Iterator[None]:
    """Renew ``held``'s lease every third of its length until the block ends."""
    stop = threading.Event()

    def keep() -> None:
        try:
            while not stop.wait(lease_seconds() / 3) and _renew(held.row.id, held.token):
                pass
        finally:
            connection.close()  # this thread's own database connection

    thread = threading.Thread(target=keep, name=f"lease-{held.row.id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _claimable(now: datetime) -> Q:
    due = Q(status=OutboxStatus.PENDING, next_attempt_at__lte=now)
    return due | Q(status=OutboxStatus.SENDING, lease_expires_at__lt=now)


def due_ids(now: datetime | None = None, grace: float = 0.0, limit: int = 500) -> list[int]:
    """Rows of enabled channels ready to send: due ``grace`` seconds ago, or with a lost lease."""
    now = now or timezone.now()
    overdue = Q(status=OutboxStatus.PENDING, next_attempt_at__lte=now - timedelta(seconds=grace))
    lost = Q(status=OutboxStatus.SENDING, lease_expires_at__lt=now)
    rows = Outbox.objects.filter(overdue | lost, channel__enabled=True).order_by("next_attempt_at")
    return list(rows.values_list("id", flat=True)[:limit])


def claim(outbox_id: int, now: datetime | None = None) -> Claim | None:
    """Take a row for sending, atomically; None when it is not ours to send."""
    now = now or timezone.now()
    token = uuid.uuid4()
    taken = Outbox.objects.filter(_claimable(now), id=outbox_id).update(
        status=OutboxStatus.SENDING,
        lease_token=token,
        lease_expires_at=now + timedelta(seconds=lease_seconds()),
        attempts=F("attempts") + 1,
    )
    if not taken:
        return None
    row = Outbox.objects.select_related("channel").get(id=outbox_id)
    DeliveryAttempt.objects.filter(outbox=row, outcome=AttemptOutcome.SENDING).update(
        outcome=AttemptOutcome.ABANDONED, finished_at=now, error="the sender's lease expired"
    )
    attempt = DeliveryAttempt.objects.create(
        outbox=row, channel=row.channel, number=row.attempts, started_at=now
    )
    return Claim(row, token, attempt)


def backoff(attempt: int) -> float:
    """Exponential backoff with jitter: half the step fixed, half random."""
    step = min(
        settings.ALERTS_NOTIFY_BACKOFF_MAX_SECONDS,
        settings.ALERTS_NOTIFY_BACKOFF_SECONDS * 2 ** max(0, attempt - 1),
    )
    return step / 2 + random.uniform(0, step / 2)  # noqa: S311 - jitter, not crypto


def deliver(outbox_id: int) -> Result:
    """Claim one row and send it once; record the attempt and what comes next."""
    held = claim(outbox_id)
    if held is None:
        return Result(outbox_id, "not claimed")
    channel = held.row.channel
    if not channel.enabled:
        _finish(held, OutboxStatus.FAILED, AttemptOutcome.REJECTED, error="channel disabled")
        return Result(outbox_id, AttemptOutcome.REJECTED)
    transport = transport_for(channel.target())
    try:
        with lease_kept(held):
            code = transport.notify(held.row.payload, delivery_id(held.row))
    except TransportError as exc:
        return _failed(held, channel, exc, transport.last_answer)
    _finish(
        held,
        OutboxStatus.DELIVERED,
        AttemptOutcome.DELIVERED,
        status_code=code,
        response=transport.last_answer,
    )
    return Result(outbox_id, AttemptOutcome.DELIVERED)


def _failed(
    held: Claim, channel: NotificationChannel, exc: TransportError, response: str = ""
) -> Result:
    metrics.count_failure(channel.kind, exc.status_code)
    log.warning("notification %s to %s failed: %s", held.row.key, channel.name, exc.message)
    if exc.permanent:
        disable_channel(channel, exc.message, exc.disable_hint)
        outcome = AttemptOutcome.CHANNEL_GONE
    elif exc.rejected:
        outcome = AttemptOutcome.REJECTED
    elif held.row.attempts >= settings.ALERTS_NOTIFY_MAX_ATTEMPTS:
        outcome = AttemptOutcome.GAVE_UP
    else:
        delay = _retry_delay(held.row.attempts, exc.retry_after)
        _finish(held, OutboxStatus.PENDING, AttemptOutcome.RETRY, exc, delay, response=response)
        return Result(held.row.id, AttemptOutcome.RETRY, delay)
    metrics.count_given_up(channel.kind, outcome)
    _finish(held, OutboxStatus.FAILED, outcome, exc, response=response)
    return Result(held.row.id, outcome)


def _retry_delay(attempt: int, retry_after: float | None) -> float:
    if retry_after is None:
        return backoff(attempt)
    # Never earlier than the receiver asked; a little jitter so senders do not stampede.
    capped = min(retry_after, settings.ALERTS_NOTIFY_MAX_RETRY_AFTER_SECONDS)
    return capped + random.uniform(0, min(1.0, capped * 0.1))  # noqa: S311


def _finish(
    held: Claim,
    status: str,
    outcome: str,
    exc: TransportError | None = None,
    retry_in: float = 0.0,
    *,
    status_code: int | None = None,
    error: str = "",
    response: str = "",
) -> None:
    now = timezone.now()
    error = exc.message if exc else error
    # A sender that lost its lease does not overwrite the "abandoned" its successor logged.
    DeliveryAttempt.objects.filter(id=held.attempt.id, outcome=AttemptOutcome.SENDING).update(
        outcome=outcome,
        finished_at=now,
        status_code=exc.status_code if exc else status_code,
        error=error,
        response=response,
    )
    done = status in (OutboxStatus.DELIVERED, OutboxStatus.FAILED)
    kept = Outbox.objects.filter(id=held.row.id, lease_token=held.token).update(
        status=status,
        lease_token=None,
        lease_expires_at=None,
        next_attempt_at=now + timedelta(seconds=retry_in),
        processed_at=now if done else None,
        last_error=error,
    )
    if not kept:
        log.error("notification %s: lease lost before the send finished", held.row.key)


def disable_channel(channel: NotificationChannel, reason: str, hint: str = GONE_HINT) -> None:
    """Turn a channel off for good (its destination is gone or moved), saying why, and drop its queue."""
    now = timezone.now()
    text = f"{reason} (at {now:%Y-%m-%d %H:%M:%S} UTC): {hint}"
    NotificationChannel.objects.filter(id=channel.id).update(
        enabled=False, disabled_reason=text, disabled_at=now
    )
    Outbox.objects.filter(channel=channel, status=OutboxStatus.PENDING).update(
        status=OutboxStatus.FAILED, processed_at=now, last_error="channel disabled: " + reason
    )
    log.error("notification channel %s disabled: %s", channel.name, reason)


def purge(now: datetime | None = None) -> int:
    """Delete finished rows (and their log) older than ``ALERTS_NOTIFY_RETENTION_DAYS``."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.ALERTS_NOTIFY_RETENTION_DAYS)
    deleted, _ = Outbox.objects.filter(processed_at__lt=cutoff).delete()
    return deleted
