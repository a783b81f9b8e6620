"""Putting a node in maintenance and taking it out: a silence on the node, and the commands to run.

Starting maintenance creates a silence ``node="<name>"`` with no end (not "until
resolved": a node under repair keeps alerting until the operator says it is done) and a
``NodeMaintenance`` row; ending it expires that silence. Both write the silence's audit
rows. ClusterWatch never touches the cluster: ``commands()`` are shown for the operator
to run, the node's name shell-quoted (names come from exporter labels: untrusted text).
"""

from __future__ import annotations

import shlex
from typing import Any, NamedTuple

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.validation import InputError, check_text

from .models import NodeMaintenance, Silence, SilenceAudit
from .silences import SilenceError, expire_silence, node_matchers, validate_silence

MAX_COMMENT_CHARS = 2000


class MaintenanceError(ValueError):
    """The request cannot be done: ``field`` names why (the node, the comment)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class Command(NamedTuple):
    """One suggested command: when to run it, and the shell text."""

    when: str
    text: str


def commands(node: str) -> list[Command]:
    """What the operator runs around the maintenance (kubectl; never executed here)."""
    quoted = shlex.quote(node)
    return [
        Command("before: stop new pods landing on the node", f"kubectl cordon {quoted}"),
        Command(
            "before: move its pods away",
            f"kubectl drain {quoted} --ignore-daemonsets --delete-emptydir-data",
        ),
        Command("after: let pods land on it again", f"kubectl uncordon {quoted}"),
    ]


def current(node: str) -> NodeMaintenance | None:
    """The node's open maintenance, if any."""
    return NodeMaintenance.objects.filter(node=node, ended_at__isnull=True).first()


def in_maintenance() -> dict[str, NodeMaintenance]:
    """Every node in maintenance now, by name."""
    return {m.node: m for m in NodeMaintenance.objects.filter(ended_at__isnull=True)}


@transaction.atomic
def start(node: str, user: Any, comment: str) -> NodeMaintenance:
    """Put ``node`` in maintenance: a silence on it until ended, and the maintenance row."""
    comment = _comment(comment)
    matchers = node_matchers(node)
    try:  # the same checks as any silence (matchers bounded, comment required)
        validate_silence(matchers=matchers, comment=comment, preset="until_resolved")
    except SilenceError as exc:
        raise MaintenanceError(
            "node" if exc.field.startswith("matchers") else exc.field, exc.message
        ) from None
    if current(node) is not None:
        raise MaintenanceError("node", "already in maintenance")
    now = timezone.now()
    silence = Silence.objects.create(
        matchers=matchers, starts_at=now, ends_at=None, until_resolved=False,
        comment=f"Maintenance: {comment}", created_by=user,
    )  # fmt: skip
    SilenceAudit.objects.create(
        silence=silence, silence_ref=silence.pk, user=user, action=SilenceAudit.Action.CREATED,
        detail={"matchers": matchers, "starts_at": now.isoformat(), "ends_at": None,
                "until_resolved": False, "maintenance": True},
    )  # fmt: skip
    try:
        with transaction.atomic():
            return NodeMaintenance.objects.create(
                node=node, silence=silence, comment=comment, started_at=now, started_by=user
            )
    except IntegrityError:  # another request put it in maintenance meanwhile
        raise MaintenanceError("node", "already in maintenance") from None


@transaction.atomic
def end(node: str, user: Any) -> NodeMaintenance:
    """Take ``node`` out of maintenance: its silence expires now."""
    maintenance = (
        NodeMaintenance.objects.select_for_update().filter(node=node, ended_at__isnull=True).first()
    )
    if maintenance is None:
        raise MaintenanceError("node", "not in maintenance")
    if maintenance.silence is not None:
        expire_silence(maintenance.silence, user)
    maintenance.ended_at = timezone.now()
    maintenance.ended_by = user
    maintenance.save(update_fields=["ended_at", "ended_by"])
    return maintenance


def _comment(comment: Any) -> str:
    if not isinstance(comment, str) or not comment.strip():
        raise MaintenanceError("comment", "required: say why (e.g. the ticket of the repair)")
    try:
        check_text(comment, "comment", max_length=MAX_COMMENT_CHARS)
    except InputError as exc:
        raise MaintenanceError(exc.field, exc.detail) from None
    return comment.strip()
