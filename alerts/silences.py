"""Silences: label matchers (=, !=, =~, !~), validation, matching, creation and expiry.

Matchers are Alertmanager's (``alerts.matchers``: RE2, fully anchored); a matcher
on a label the alert lacks compares against the empty string. A silence whose every
matcher passes the empty string would mute every alert lacking those labels: it is
refused unless ``confirm_match_all`` (Alertmanager refuses it outright). Times lie
within 2000-01-01 .. now + 10 years; comments, matchers and values are bounded. Creating or expiring a
silence writes a ``SilenceAudit`` row; invalid input raises ``SilenceError``
naming the field, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.validation import DATA_EARLIEST, InputError, check_text, check_time

from .matchers import (
    MATCH_OPS,
    MAX_MATCHERS,
    MAX_NAME_CHARS,
    MAX_VALUE_CHARS,
    Matcher,
    MatcherError,
    compile_regex,
    matches_everything,
)
from .models import Silence, SilenceAudit

OPS = MATCH_OPS
MAX_COMMENT_CHARS = 2000
#: A silence starts and ends within 2000-01-01 .. now + this (``until_resolved`` has no end).
MAX_AHEAD = timedelta(days=3653)
PRESETS = {"1h": timedelta(hours=1), "4h": timedelta(hours=4), "24h": timedelta(hours=24)}


class SilenceError(ValueError):
    """Invalid silence input; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def parse_matchers(raw: Any, field: str = "matchers") -> list[Matcher]:
    """Validate and compile ``[{"name", "op", "value"}, ...]``; SilenceError on any problem."""
    if not isinstance(raw, list) or not raw:
        raise SilenceError(
            field,
            'expected a non-empty list like [{"name": "node", "op": "=", "value": "gpu-001"}]',
        )
    if len(raw) > MAX_MATCHERS:
        raise SilenceError(field, f"at most {MAX_MATCHERS} matchers")
    compiled = [_matcher(item, f"{field}[{i}]") for i, item in enumerate(raw)]
    _check_rule_matchers(compiled, field)
    return compiled


def _matcher(item: Any, where: str) -> Matcher:
    """One validated matcher (names and values bounded, regexes compiled by RE2)."""
    if not isinstance(item, dict):
        raise SilenceError(where, "expected an object with name, op and value")
    unknown = set(item) - {"name", "op", "value"}
    if unknown:
        raise SilenceError(
            f"{where}.{ascii(sorted(unknown)[0])[1:-1][:100]}",
            "unknown field (expected name, op, value)",
        )
    try:
        check_text(item.get("name"), f"{where}.name", max_length=MAX_NAME_CHARS, required=True)
        check_text(item.get("value"), f"{where}.value", max_length=MAX_VALUE_CHARS)
    except InputError as exc:
        raise SilenceError(exc.field, exc.detail) from None
    op = item.get("op", "=")
    if op not in OPS:
        raise SilenceError(f"{where}.op", f"expected one of {', '.join(OPS)}, got {op!r}")
    if op in ("=~", "!~"):
        try:
            compile_regex(item["value"])
        except MatcherError as exc:
            raise SilenceError(f"{where}.value", str(exc)) from None
    return Matcher(item["name"], op, item["value"])


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


def validate_silence(
    *,
    matchers: Any,
    comment: Any,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    preset: str | None = None,
    confirm_match_all: bool = False,
    now: datetime | None = None,
) -> tuple[datetime, datetime | None, bool]:
    """Check a silence without writing it: (starts_at, ends_at, until_resolved) or SilenceError."""
    _check_scope(parse_matchers(matchers), confirm_match_all)
    _check_comment(comment)
    now = now or timezone.now()
    start = _bounded("starts_at", starts_at, now) if starts_at else now
    if ends_at is not None:
        _bounded("ends_at", ends_at, now)
    end, until_resolved = resolve_end(start, ends_at, preset)
    return start, end, until_resolved


@transaction.atomic
def create_silence(
    *,
    matchers: Any,
    comment: str,
    created_by: Any,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    preset: str | None = None,
    confirm_match_all: bool = False,
) -> Silence:
    """Validate and create a silence (with its audit row); SilenceError names the bad field."""
    start, end, until_resolved = validate_silence(
        matchers=matchers,
        comment=comment,
        starts_at=starts_at,
        ends_at=ends_at,
        preset=preset,
        confirm_match_all=confirm_match_all,
    )
    if created_by is None or not getattr(created_by, "is_authenticated", False):
        raise SilenceError("created_by", "required")
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


def _check_scope(matchers: list[Matcher], confirm_match_all: bool) -> None:
    if matches_everything(matchers) and not confirm_match_all:
        raise SilenceError(
            "matchers",
            "every matcher also matches an empty label, so this silence would mute every alert "
            'lacking these labels; narrow it, or send "confirm_match_all": true',
        )


def _check_comment(comment: Any) -> None:
    if not isinstance(comment, str) or not comment.strip():
        raise SilenceError("comment", "required: say why (e.g. the ticket of the repair)")
    try:
        check_text(comment, "comment", max_length=MAX_COMMENT_CHARS)
    except InputError as exc:
        raise SilenceError(exc.field, exc.detail) from None


def _bounded(field: str, moment: datetime, now: datetime) -> datetime:
    try:
        return check_time(moment, field, now=now, earliest=DATA_EARLIEST, max_future=MAX_AHEAD)
    except InputError as exc:
        raise SilenceError(exc.field, exc.detail) from None


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
