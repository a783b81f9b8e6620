"""Cluster dimensions: nodes, their pools over time, IB ports and XID events."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .choices import Pool


class Node(models.Model):
    """A Kubernetes node seen in any family; the name is an untrusted label value."""

    name = models.CharField(max_length=253, unique=True)
    pool = models.CharField(max_length=16, choices=Pool.choices, default=Pool.UNKNOWN)
    unschedulable = models.BooleanField(default=False)
    leaf_switch = models.CharField(
        max_length=253, blank=True, help_text="Most common leaf of its ports."
    )
    gpu_model = models.CharField(max_length=100, blank=True)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PoolChange(models.Model):
    """A node's pool over time (taint changes), so capacity flips can be charted."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="pool_changes")
    ts = models.DateTimeField()
    pool = models.CharField(max_length=16, choices=Pool.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "ts"], name="uniq_pool_change")]

    def __str__(self) -> str:
        return f"{self.node_id} → {self.pool} at {self.ts:%Y-%m-%d %H:%M}"


class IbPort(models.Model):
    """One HCA port of a node (device mlx5_N, port 1) and where it plugs into the fabric."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="ib_ports")
    device = models.CharField(max_length=64)
    port = models.PositiveSmallIntegerField(default=1)
    guid = models.CharField(max_length=32, blank=True)
    leaf_switch = models.CharField(max_length=253, blank=True)
    switch_port = models.CharField(max_length=32, blank=True)

    class Meta:
        ordering = ["node__name", "device", "port"]
        constraints = [
            models.UniqueConstraint(fields=["node", "device", "port"], name="uniq_ib_port")
        ]

    def __str__(self) -> str:
        return f"{self.node.name}/{self.device}:{self.port}"


class XidEvent(models.Model):
    """A new or changed XID code on a GPU (DCGM's gauge is sticky: only changes are events)."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="xid_events")
    gpu = models.SmallIntegerField()
    ts = models.DateTimeField()
    code = models.IntegerField()
    message = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-ts"]
        constraints = [
            models.UniqueConstraint(fields=["node", "gpu", "ts", "code"], name="uniq_xid")
        ]

    def __str__(self) -> str:
        return (
            f"XID {self.code} on node {self.node_id} GPU {self.gpu} at {self.ts:%Y-%m-%d %H:%M:%S}"
        )
