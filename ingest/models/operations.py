"""Ingest bookkeeping: cursors, per-family health, cycles and Prometheus outages."""

from __future__ import annotations

from django.db import models

from .choices import Family


class IngestCursor(models.Model):
    """How far a family is ingested; advanced in the same transaction as the rows it covers."""

    family = models.CharField(max_length=16, choices=Family.choices, primary_key=True)
    covered_until = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.family} until {self.covered_until:%Y-%m-%d %H:%M:%S}"


class ShardCursor(models.Model):
    """How far one shard (a stable hash group of nodes) of a family is ingested.

    Advanced in the same transaction as the shard's rows. ``shards`` is the shard
    count the cursor belongs to: changing INGEST_SHARDS starts a new set from the
    family cursor, which is the minimum of the current set.
    """

    family = models.CharField(max_length=16, choices=Family.choices)
    shards = models.PositiveSmallIntegerField()
    shard = models.PositiveSmallIntegerField()
    covered_until = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["family", "shards", "shard"], name="uniq_shard_cursor")
        ]

    def __str__(self) -> str:
        return f"{self.family} {self.shard}/{self.shards} until {self.covered_until:%H:%M:%S}"


class FamilyHealth(models.Model):
    """The latest ingest outcome of a family (shown in /readyz, /metrics, the overview)."""

    family = models.CharField(max_length=16, choices=Family.choices, primary_key=True)
    last_attempt = models.DateTimeField(null=True)
    last_success = models.DateTimeField(null=True)
    lag_seconds = models.FloatField(null=True)
    duration_seconds = models.FloatField(null=True)
    rows = models.BigIntegerField(default=0, help_text="rows written, total since the first cycle")
    skipped = models.BigIntegerField(default=0, help_text="points skipped, total")
    errors = models.BigIntegerField(default=0, help_text="failed cycles, total")
    last_rows = models.IntegerField(default=0, help_text="rows written by the last cycle")
    last_error = models.TextField(blank=True)
    skipped_reasons = models.JSONField(
        default=dict, blank=True, help_text='series the last cycle skipped: {"job: reason": count}'
    )

    def __str__(self) -> str:
        return self.family


class IngestCycle(models.Model):
    """One ingest cycle of one family: the history behind ``FamilyHealth``."""

    family = models.CharField(max_length=16, choices=Family.choices)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    rows = models.IntegerField(default=0)
    skipped = models.IntegerField(default=0)
    skipped_reasons = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["family", "-started_at"])]

    def __str__(self) -> str:
        return f"{self.family} {self.window_start:%H:%M:%S}–{self.window_end:%H:%M:%S}"


class PrometheusOutage(models.Model):
    """A period when Prometheus could not be queried; the gap is caught up afterwards."""

    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"outage from {self.started_at:%Y-%m-%d %H:%M:%S}"


class Compaction(models.Model):
    """How far one day's partition of a hot sample table is compacted into history.

    Advanced in the transaction that compacts each hour (``ingest.compaction``), so a
    worker killed mid-way resumes at the first hour not committed; rewound by ingest when
    it writes rows older than that (a backfill), so they are compacted too.
    """

    table = models.CharField(max_length=32, help_text="the hot table, e.g. ingest_gpusample")
    day = models.DateField(help_text="the partition's day (UTC)")
    compacted_until = models.DateTimeField(help_text="every hour before this is compacted")
    high_water = models.DateTimeField(help_text="hours before this may have history rows")
    rows = models.BigIntegerField(default=0, help_text="hot rows moved into history, total")
    leftover = models.BigIntegerField(
        default=0, help_text="rows left hot (off the step grid or out of an encoding's range)"
    )
    seconds = models.FloatField(default=0.0, help_text="time spent compacting, total")
    finished_at = models.DateTimeField(
        null=True, blank=True, help_text="when the emptied hot partition was truncated"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["table", "day"], name="uniq_compaction_day")]

    def __str__(self) -> str:
        return f"{self.table} {self.day:%Y-%m-%d} until {self.compacted_until:%H:%M}"
