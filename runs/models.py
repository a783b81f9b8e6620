"""Runs: jobs, pods, node assignments, run events and checkpoints.

Ingest writes these tables through ``runs.store`` (its only write path into the app); every
other reader goes through ``runs.selectors``. Until migration ``ingest.0016`` the models lived
in ingest, on tables with ingest's prefix; ``runs.0001`` took them over and renamed the tables.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from ingest.models import ClusterQueue, Node


class Job(models.Model):
    """A training run: one top-level workload (a Job, JobSet, PyTorchJob, MPIJob, RayJob or
    RayCluster, LeaderWorkerSet; namespace + name) with its pods (``ingest.runs_normalize``)."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        UNKNOWN = "unknown", "Unknown"

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    kind = models.CharField(
        max_length=64,
        default="Job",
        db_default="Job",
        help_text="The top-level workload's kind (Job, JobSet, …).",
    )
    local_queue = models.CharField(max_length=253, blank=True)
    cluster_queue = models.ForeignKey(
        ClusterQueue, null=True, blank=True, on_delete=models.SET_NULL
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.UNKNOWN)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-first_seen"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="uniq_job")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class Pod(models.Model):
    """A pod of a job; its node assignments over time are in ``PodAssignment``."""

    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.CASCADE, related_name="pods"
    )
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    phase = models.CharField(max_length=32, blank=True)
    restarts = models.IntegerField(default=0)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="uniq_pod")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class PodAssignment(models.Model):
    """A pod held a node from ``first_seen`` to ``last_seen`` (run → node membership over time)."""

    pod = models.ForeignKey(Pod, on_delete=models.CASCADE, related_name="assignments")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="pod_assignments")
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pod", "node", "first_seen"], name="uniq_assignment")
        ]

    def __str__(self) -> str:
        return f"pod {self.pod_id} on node {self.node_id} from {self.first_seen:%Y-%m-%d %H:%M}"


class RunEvent(models.Model):
    """Something that happened to a run: a pod restart, a phase change, an eviction."""

    class Kind(models.TextChoices):
        STARTED = "started", "Started"
        RESTART = "restart", "Pod restart (crash)"
        FAILED = "failed", "Failed"
        SUCCEEDED = "succeeded", "Succeeded"
        EVICTED = "evicted", "Evicted"
        PREEMPTED = "preempted", "Preempted"
        # kube_pod_status_reason (kube-state-metrics): see runs_normalize.EVENT_OF_POD_REASON.
        NODE_LOST = "node_lost", "Node lost"
        NODE_SHUTDOWN = "node_shutdown", "Node shutdown"
        REJECTED = "rejected", "Rejected by the kubelet"
        GATED = "gated", "Scheduling gated"
        POD_REASON = "pod_reason", "Other pod status reason"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    ts = models.DateTimeField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    pod = models.CharField(max_length=253, blank=True)
    detail = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["ts"]
        constraints = [
            models.UniqueConstraint(fields=["job", "ts", "kind", "pod"], name="uniq_run_event")
        ]

    def __str__(self) -> str:
        return f"{self.kind} of job {self.job_id} at {self.ts:%Y-%m-%d %H:%M:%S}"


class Checkpoint(models.Model):
    """One checkpoint of a run, from the Prometheus gauges or pushed by the job over the API."""

    class Source(models.TextChoices):
        PROMETHEUS = "prometheus", "Prometheus gauges"
        API = "api", "Pushed over the API"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.BigIntegerField()
    ts = models.DateTimeField()
    duration_seconds = models.FloatField(null=True, blank=True)
    bytes = models.BigIntegerField(null=True, blank=True)
    path = models.CharField(max_length=1000, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)

    class Meta:
        ordering = ["ts"]
        constraints = [models.UniqueConstraint(fields=["job", "step"], name="uniq_checkpoint_step")]

    def __str__(self) -> str:
        return f"step {self.step} of job {self.job_id} at {self.ts:%Y-%m-%d %H:%M:%S}"
