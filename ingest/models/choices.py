"""Ingest families and node pools: the choices other apps share."""

from __future__ import annotations

from django.db import models


class Family(models.TextChoices):
    """Ingest families: each has its own cursor, health row and PromQL."""

    GPU = "gpu", "GPU (dcgm-exporter)"
    IB = "ib", "InfiniBand"
    TOPOLOGY = "topology", "IB topology"
    KUEUE = "kueue", "Kueue"
    CLUSTER = "cluster", "Cluster membership"
    RUNS = "runs", "Runs (pods and jobs)"
    CHECKPOINTS = "checkpoints", "Checkpoints"


class Pool(models.TextChoices):
    TRAINING = "training", "Training"
    INFERENCE = "inference", "Inference"
    UNKNOWN = "unknown", "Unknown"
