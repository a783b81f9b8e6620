"""The dead man's switch: an always-firing ``watchdog`` alert, and the heartbeat ping.

Alertmanager convention (kube-prometheus' ``Watchdog``): an alert that always fires while
the alerting pipeline works, routed to an external dead man's switch that pages when it
stops arriving. Here it fires while evaluation runs: the watchdog is part of every flush of
the channels that opt in (``NotificationChannel.watchdog``) as long as the newest
evaluation started within ``ALERTS_WATCHDOG_MAX_AGE_SECONDS``. When evaluation stops (or
Celery, Redis or Postgres do), it is no longer sent: an Alertmanager lets it time out, a
webhook receiver stops getting its repeats. It never resolves explicitly.

``ping_heartbeat()``: after each successful evaluation, one request to ``HEARTBEAT_URL``
(healthchecks-style, a POST) under a whole-request deadline; the URL is a secret, logged redacted.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings

from core.secrets import url_shape

from .notify.grouping import WATCHDOG, AlertView
from .transports import deadline as wire

log = logging.getLogger(__name__)

WATCHDOG_ID = -1  # never an Alert row's id: the groups' "notified" record keys alerts by id
SUMMARY = (
    "ClusterWatch is evaluating its alert rules. This alert always fires: route it to a dead "
    "man's switch, which must page when it stops arriving."
)


def is_watchdog(alert: AlertView) -> bool:
    """Whether the alert is the watchdog."""
    return alert.labels.get("alertname") == WATCHDOG


def last_evaluation() -> datetime | None:
    """When the newest evaluation started (wall clock)."""
    from .models import Evaluation

    return Evaluation.objects.order_by("-started_at").values_list("started_at", flat=True).first()


def watchdog_view(now: datetime, external_url: str) -> AlertView | None:
    """The firing watchdog, or None when evaluation has not run for the max age."""
    started = last_evaluation()
    max_age = timedelta(seconds=float(settings.ALERTS_WATCHDOG_MAX_AGE_SECONDS))
    if started is None or started < now - max_age:
        return None
    return AlertView(
        id=WATCHDOG_ID,
        fingerprint=WATCHDOG,
        status="firing",
        severity="info",
        labels={"alertname": WATCHDOG, "severity": "info"},
        annotations={"summary": SUMMARY, "last_evaluation": started.isoformat()},
        starts_at=started,
        ends_at=None,
        generator_url=external_url,
    )


def ping_heartbeat() -> bool:
    """One POST to ``HEARTBEAT_URL`` (if set) under ``HEARTBEAT_TIMEOUT_SECONDS``; True if 2xx.

    healthchecks.io and its kin take GET, HEAD or POST on the ping URL; POST carries an
    empty body here (never a redirect: the deadline's client does not follow one).
    """
    url = settings.HEARTBEAT_URL
    if not url:
        return False
    try:
        answer = wire.request(
            "POST", url, b"", {"User-Agent": "ClusterWatch-Heartbeat/1", "Content-Length": "0"},
            float(settings.HEARTBEAT_TIMEOUT_SECONDS),
        )  # fmt: skip
    except (wire.DeadlineExceeded, wire.ConnectionFailed) as exc:
        log.warning("heartbeat %s failed: %s", url_shape(url), exc)
        return False
    if not 200 <= answer.status < 300:
        log.warning("heartbeat %s answered %s", url_shape(url), answer.status)
        return False
    return True
