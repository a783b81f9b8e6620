"""Node maintenance: a node taken out of service by an operator, with the silence that mutes it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from .core import Silence


class NodeMaintenance(models.Model):
    """A node in maintenance from ``started_at`` until ``ended_at`` (NULL: still in maintenance).

    ``silence`` mutes every alert of the node (``node="<name>"``) with no end; leaving
    maintenance expires it. At most one open maintenance per node. Written only through
    ``alerts.maintenance``.
    """

    node = models.CharField(max_length=253, help_text="The node's name (ingest Node.name).")
    silence = models.ForeignKey(
        Silence, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    comment = models.TextField()
    started_at = models.DateTimeField(default=timezone.now)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-started_at"]
        verbose_name_plural = "node maintenance"
        constraints = [
            models.UniqueConstraint(
                fields=["node"],
                condition=Q(ended_at__isnull=True),
                name="maintenance_one_open_per_node",
            )
        ]

    def __str__(self) -> str:
        return f"{self.node} in maintenance since {self.started_at:%Y-%m-%d %H:%M}"
