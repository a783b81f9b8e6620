"""The dashboard's vocabulary in one place: heatmap metrics, windows, row orders, node states."""

from __future__ import annotations

from datetime import timedelta

from django.db import models

from ingest.heatmap_metrics import HEATMAP_METRICS
from ingest.selectors import Family

#: Metrics read from the InfiniBand family (the rest come from dcgm-exporter).
IB_METRICS = frozenset(m for m, spec in HEATMAP_METRICS.items() if spec.family == Family.IB)
#: (id, label) of every heatmap metric, the fabric's IB metrics first, as ingest defines them.
HEATMAP_METRIC_CHOICES: list[tuple[str, str]] = [
    (metric, spec.label)
    for metric, spec in sorted(HEATMAP_METRICS.items(), key=lambda item: item[0] not in IB_METRICS)
]
HEATMAP_METRIC_IDS = [metric for metric, _ in HEATMAP_METRIC_CHOICES]
#: The rails view: one cell per HCA port, so IB metrics only.
IB_METRIC_CHOICES = [choice for choice in HEATMAP_METRIC_CHOICES if choice[0] in IB_METRICS]
#: What the heatmap and the rails view show when no metric is asked for.
DEFAULT_HEATMAP_METRIC = "ib_tx"
DEFAULT_RAILS_METRIC = "ib_errors"
assert {DEFAULT_HEATMAP_METRIC, DEFAULT_RAILS_METRIC} <= IB_METRICS


class HeatmapSort(models.TextChoices):
    """Row orders: by name, by leaf switch (a switch fault shows as a band), worst first."""

    NAME = "name", "Name"
    TOPOLOGY = "topology", "Topology (leaf switch)"
    WORST = "worst", "Worst first"


class Window(models.TextChoices):
    """Relative time windows offered by every chart."""

    H1 = "1h", "1 h"
    H6 = "6h", "6 h"
    H24 = "24h", "24 h"
    D7 = "7d", "7 d"


WINDOW_SPANS: dict[str, timedelta] = {
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
}

#: Candidate heatmap steps (seconds): the smallest giving at most one column per few pixels wins.
NICE_STEPS = (30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600)
#: Pixels per heatmap column the step aims for.
PIXELS_PER_COLUMN = 3
#: Longest custom range the heatmap accepts.
MAX_SPAN = timedelta(days=15)
#: Most time columns one chart answer holds: a smaller step is raised to fit (``forms.capped_step``).
MAX_COLUMNS = 2000


class NodeState(models.TextChoices):
    """What the overview counts nodes by."""

    HEALTHY = "healthy", "Healthy"
    WARNING = "warning", "Warning"
    CRITICAL = "critical", "Critical"
    SILENCED = "silenced", "Silenced"
    MISSING = "missing", "Missing"


#: A node not seen for this long is "missing".
MISSING_AFTER = timedelta(minutes=5)
