"""Kueue ClusterQueues and their per-step samples, evictions and quota."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class ClusterQueue(models.Model):
    """A Kueue ClusterQueue."""

    name = models.CharField(max_length=253, unique=True)
    cohort = models.CharField(max_length=253, blank=True)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class KueueSample(models.Model):
    """Per-ClusterQueue values at one step."""

    pk = models.CompositePrimaryKey("cluster_queue_id", "ts")
    ts = models.DateTimeField()
    cluster_queue = models.ForeignKey(
        ClusterQueue, on_delete=models.DO_NOTHING, db_constraint=False
    )
    pending_active = models.FloatField(null=True)
    pending_inadmissible = models.FloatField(null=True)
    admitted_active = models.FloatField(null=True)
    admitted = models.FloatField(null=True, help_text="admissions over the step")
    wait_p50 = models.FloatField(null=True, help_text="admission wait seconds, over the step")
    wait_p95 = models.FloatField(null=True, help_text="admission wait seconds, over the step")

    class Meta:
        managed = False
        db_table = "ingest_kueuesample"

    def __str__(self) -> str:
        return f"queue {self.cluster_queue_id} at {self.ts:%Y-%m-%d %H:%M:%S}"


class KueueEviction(models.Model):
    """Evictions / preemptions of a ClusterQueue's workloads over one step, by reason."""

    class Kind(models.TextChoices):
        EVICTED = "evicted", "Evicted"
        PREEMPTED = "preempted", "Preempted"

    cluster_queue = models.ForeignKey(ClusterQueue, on_delete=models.CASCADE)
    ts = models.DateTimeField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    reason = models.CharField(max_length=100)
    count = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_queue", "ts", "kind", "reason"], name="uniq_eviction"
            )
        ]

    def __str__(self) -> str:
        return f"{self.count:g} {self.kind} ({self.reason}) at {self.ts:%Y-%m-%d %H:%M}"


class KueueQuota(models.Model):
    """Quota usage of a ClusterQueue per flavor and resource, when Kueue reports it."""

    cluster_queue = models.ForeignKey(ClusterQueue, on_delete=models.CASCADE)
    ts = models.DateTimeField()
    flavor = models.CharField(max_length=100)
    resource = models.CharField(max_length=100)
    usage = models.FloatField()
    nominal = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_queue", "ts", "flavor", "resource"], name="uniq_quota"
            )
        ]

    def __str__(self) -> str:
        return f"{self.flavor}/{self.resource}: {self.usage:g} at {self.ts:%Y-%m-%d %H:%M}"
