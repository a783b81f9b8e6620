"""ClusterWatch silences mirrored into every Alertmanager channel through its v2 API.

An Alertmanager channel is sent every firing alert, silenced ones too
(``forwarding``), so Alertmanager must silence what ClusterWatch silences. Each
flush compares our silences that have not ended with what each Alertmanager was
told (``SilenceMirror``): a new silence is created there, a changed one (end,
matchers, comment) updated, an ended, expired or deleted one expired there. An
"until resolved" silence has no end; it is mirrored ``ALERTS_NOTIFY_SILENCE_HORIZON_SECONDS``
ahead and extended when half of that is left. Each mirrored silence is
``createdBy: ClusterWatch`` with a comment naming our silence id. A failure is
logged on the mirror row and retried at the next flush.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from ..models import ChannelKind, NotificationChannel, Silence, SilenceMirror
from ..transports import TransportError, transport_for
from ..transports.alertmanager import AlertmanagerTransport
from .messages import rfc3339

log = logging.getLogger(__name__)

CREATED_BY = "ClusterWatch"
SILENCE_PATH = "/admin/alerts/silence/{id}/change/"


def am_matcher(matcher: dict[str, str]) -> dict[str, Any]:
    """One of our matchers in Alertmanager's form (``isRegex`` / ``isEqual``)."""
    op = matcher["op"]
    return {
        "name": matcher["name"],
        "value": matcher["value"],
        "isRegex": op in ("=~", "!~"),
        "isEqual": op in ("=", "=~"),
    }


def describe(silence: Silence) -> dict[str, Any]:
    """The mirrored silence without its end: matchers, start, author and comment."""
    link = settings.EXTERNAL_URL.rstrip("/") + SILENCE_PATH.format(id=silence.pk)
    return {
        "matchers": [am_matcher(m) for m in silence.matchers],
        "startsAt": rfc3339(silence.starts_at),
        "createdBy": CREATED_BY,
        "comment": f"ClusterWatch silence {silence.pk}: {silence.comment} ({link})",
    }


def mirrored_end(silence: Silence, mirror: SilenceMirror | None, now: datetime) -> datetime:
    """The end to give Alertmanager: ours, or for an open end the horizon (kept when still far)."""
    if silence.ends_at is not None:
        return silence.ends_at
    horizon = timedelta(seconds=settings.ALERTS_NOTIFY_SILENCE_HORIZON_SECONDS)
    if mirror is not None and mirror.ends_at is not None and mirror.ends_at - now > horizon / 2:
        return mirror.ends_at
    return now + horizon


def sync(now: datetime) -> None:
    """Mirror silences into every enabled Alertmanager channel."""
    channels = NotificationChannel.objects.filter(enabled=True, kind=ChannelKind.ALERTMANAGER)
    for channel in channels:
        sync_channel(channel, now)


def sync_channel(channel: NotificationChannel, now: datetime) -> None:
    """Create, update and expire one Alertmanager's copies of our silences."""
    transport = transport_for(channel.target())
    assert isinstance(transport, AlertmanagerTransport)
    mirrors = {m.silence_ref: m for m in channel.silence_mirrors.filter(expired_at=None)}
    for silence in Silence.objects.exclude(ends_at__lte=now).order_by("id"):
        _mirror(transport, channel, silence, mirrors.pop(silence.pk, None), now)
    for mirror in mirrors.values():  # ended, expired early, or purged here
        _expire(transport, mirror, now)


def _mirror(
    transport: AlertmanagerTransport,
    channel: NotificationChannel,
    silence: Silence,
    mirror: SilenceMirror | None,
    now: datetime,
) -> None:
    sent, end = describe(silence), mirrored_end(silence, mirror, now)
    if mirror and mirror.alertmanager_id and mirror.sent == sent and mirror.ends_at == end:
        return
    mirror = mirror or SilenceMirror(channel=channel, silence=silence, silence_ref=silence.pk)
    body = {**sent, "endsAt": rfc3339(end)}
    try:
        mirror.alertmanager_id = _put(transport, body, mirror.alertmanager_id)
    except TransportError as exc:
        log.warning("silence %s not mirrored to %s: %s", silence.pk, channel.name, exc.message)
        mirror.last_error = exc.message
        mirror.save()
        return
    mirror.sent, mirror.ends_at, mirror.synced_at, mirror.last_error = sent, end, now, ""
    mirror.save()


def _put(transport: AlertmanagerTransport, body: dict[str, Any], known_id: str) -> str:
    if not known_id:
        return transport.put_silence(body)
    try:
        # Alertmanager updates in place when it can, else expires it and answers a new id.
        return transport.put_silence({**body, "id": known_id})
    except TransportError as exc:
        if exc.status_code != 404:
            raise
        return transport.put_silence(body)  # it forgot the silence (restarted without storage)


def _expire(transport: AlertmanagerTransport, mirror: SilenceMirror, now: datetime) -> None:
    try:
        if mirror.alertmanager_id:
            transport.expire_silence(mirror.alertmanager_id)
    except TransportError as exc:
        mirror.last_error = exc.message
        mirror.save(update_fields=["last_error"])
        return
    mirror.expired_at, mirror.last_error = now, ""
    mirror.save(update_fields=["expired_at", "last_error"])
