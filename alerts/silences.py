"""Silences: label matchers (=, !=, =~, !~), validation, matching, creation and expiry.

Matchers are Alertmanager's: regexes are fully anchored; a matcher on a label
the alert lacks compares against the empty string. Creating or expiring a
silence writes a ``SilenceAudit`` row; invalid input raises ``SilenceError``
naming the field, and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .models import Silence, SilenceAudit

OPS = ("=", "!=", "=~", "!~")
PRESETS = {"1h": timedelta(hours=1), "4h": timedelta(hours=4), "24h": timedelta(hours=24)}


class SilenceError(ValueError):
    """Invalid silence input; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Matcher:
    """One compiled label matcher."""

    name: str
    op: str
    value: str
    pattern: re.Pattern[str] | None = None

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this matcher."""
        actual = str(labels.get(self.name, ""))
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        hit = self.pattern is not None and self.pattern.fullmatch(actual) is not None
        return hit if self.op == "=~" else not hit


def parse_matchers(raw: Any, field: str = "matchers") -> list[Matcher]:
    """Validate and compile ``[{"name", "op", "value"}, ...]``; SilenceError on any problem."""
    if not isinstance(raw, list) or not raw:
        raise SilenceError(
            field,
            'expected a non-empty list like [{"name": "node", "op": "=", "value": "gpu-001"}]',
        )
    compiled = []
    for i, item in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(item, dict):
            raise SilenceError(where, "expected an object with name, op and value")
        unknown = set(item) - {"name", "op", "value"}
        if unknown:
            raise SilenceError(
                f"{where}.{sorted(unknown)[0]}", "unknown field (expected name, op, value)"
            )
        for key in ("name", "value"):
            if not isinstance(item.get(key), str):
                raise SilenceError(f"{where}.{key}", "expected a string")
        if not item["name"]:
            raise SilenceError(f"{where}.name", "must not be empty")
        op = item.get("op", "=")
        if op not in OPS:
            raise SilenceError(f"{where}.op", f"expected one of {', '.join(OPS)}, got {op!r}")
        pattern = None
        if op in ("=~", "!~"):
            try:
                pattern = re.compile(item["value"])
            except re.error as exc:
                raise SilenceError(f"{where}.value", f"invalid regular expression: {exc}") from None
        compiled.append(Matcher(item["name"], op, item["value"], pattern))
    _check_rule_matchers(compiled, field)
    return compiled


def _check_rule_matchers(matchers: list[Matcher], field: str) -> None:
    """An equality matcher on ``alertname`` must name a known rule (a typo would silence nothing)."""
    from .rules import REGISTRY

    for i, matcher in enumerate(matchers):
        if matcher.name == "alertname" and matcher.op == "=" and matcher.value not in REGISTRY:
            known = ", ".join(sorted(REGISTRY))
            raise SilenceError(
                f"{field}[{i}].value", f"unknown rule {matcher.value!r} (known: {known})"
            )


def matches_all(matchers: Iterable[Matcher], labels: Mapping[str, str]) -> bool:
    """Whether every matcher matches ``labels``."""
    return all(m.matches(labels) for m in matchers)


def describe_matchers(raw: Any) -> str:
    """``{node="gpu-001", alertname=~"ib_.*"}``, for lists and the admin."""
    if not isinstance(raw, list):
        return "{}"
    parts = [
        f'{m.get("name")}{m.get("op", "=")}"{m.get("value")}"' for m in raw if isinstance(m, dict)
    ]
    return "{" + ", ".join(parts) + "}"


def node_matchers(node: str) -> list[dict[str, str]]:
    """The matchers of a "silence this node" silence."""
    return [{"name": "node", "op": "=", "value": node}]


def resolve_end(
    starts_at: datetime, ends_at: datetime | None, preset: str | None
) -> tuple[datetime | None, bool]:
    """(ends_at, until_resolved) from an explicit end or a preset (1h, 4h, 24h, until_resolved)."""
    if preset:
        if preset == "until_resolved":
            return None, True
        if preset not in PRESETS:
            raise SilenceError(
                "preset",
                f"expected one of {', '.join([*PRESETS, 'until_resolved'])}, got {preset!r}",
            )
        return starts_at + PRESETS[preset], False
    if ends_at is None:
        raise SilenceError("ends_at", "required (or give a preset: 1h, 4h, 24h, until_resolved)")
    if ends_at <= starts_at:
        raise SilenceError("ends_at", "must be after starts_at")
    return ends_at, False


@transaction.atomic
def create_silence(
    *,
    matchers: Any,
    comment: str,
    created_by: Any,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    preset: str | None = None,
) -> Silence:
    """Validate and create a silence (with its audit row); SilenceError names the bad field."""
    parse_matchers(matchers)
    if not isinstance(comment, str) or not comment.strip():
        raise SilenceError("comment", "required: say why (e.g. the ticket of the repair)")
    if created_by is None or not getattr(created_by, "is_authenticated", False):
        raise SilenceError("created_by", "required")
    start = starts_at or timezone.now()
    end, until_resolved = resolve_end(start, ends_at, preset)
    silence = Silence.objects.create(
        matchers=matchers,
        starts_at=start,
        ends_at=end,
        until_resolved=until_resolved,
        comment=comment.strip(),
        created_by=created_by,
    )
    SilenceAudit.objects.create(
        silence=silence,
        silence_ref=silence.pk,
        user=created_by,
        action=SilenceAudit.Action.CREATED,
        detail={
            "matchers": matchers,
            "starts_at": start.isoformat(),
            "ends_at": end.isoformat() if end else None,
            "until_resolved": until_resolved,
        },
    )
    return silence


@transaction.atomic
def expire_silence(silence: Silence, user: Any, now: datetime | None = None) -> bool:
    """End a silence now; False if it had already ended."""
    now = now or timezone.now()
    if silence.ends_at is not None and silence.ends_at <= now:
        return False
    silence.ends_at = max(now, silence.starts_at)
    silence.expired_at = now
    silence.expired_by = user if getattr(user, "is_authenticated", False) else None
    silence.save(update_fields=["ends_at", "expired_at", "expired_by"])
    SilenceAudit.objects.create(
        silence=silence,
        silence_ref=silence.pk,
        user=silence.expired_by,
        action=SilenceAudit.Action.EXPIRED,
    )
    return True


def active_silences(now: datetime) -> list[tuple[Silence, list[Matcher]]]:
    """Silences muting at ``now``, with compiled matchers (oldest first: the first match wins)."""
    found = []
    for silence in (
        Silence.objects.filter(starts_at__lte=now)
        .exclude(ends_at__lte=now)
        .order_by("starts_at", "id")
    ):
        try:
            found.append((silence, parse_matchers(silence.matchers)))
        except SilenceError:
            continue  # stored before validation tightened: it cannot match reliably
    return found


def purge_expired(now: datetime) -> int:
    """Delete silences ended longer ago than ALERTS_SILENCE_RETENTION_SECONDS (audit rows stay)."""
    horizon = now - timedelta(seconds=settings.ALERTS_SILENCE_RETENTION_SECONDS)
    old = list(Silence.objects.filter(ends_at__lt=horizon).values_list("pk", flat=True))
    if not old:
        return 0
    SilenceAudit.objects.bulk_create(
        [
            SilenceAudit(silence_id=pk, silence_ref=pk, action=SilenceAudit.Action.PURGED)
            for pk in old
        ]
    )
    Silence.objects.filter(pk__in=old).delete()
    return len(old)
