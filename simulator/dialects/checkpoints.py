"""Training checkpoint gauges (no standard exporter: the shape the product's config expects)."""

from __future__ import annotations

from simulator.exposition import GAUGE, Family, Lines, big, label_str, num
from simulator.schedule import Checkpoint, Run

TIMESTAMP = Family(
    "training_last_checkpoint_timestamp_seconds",
    GAUGE,
    "Unix time the run's last checkpoint completed.",
)
STEP = Family(
    "training_last_checkpoint_step", GAUGE, "Training step saved by the run's last checkpoint."
)
DURATION = Family(
    "training_last_checkpoint_duration_seconds",
    GAUGE,
    "Seconds the run's last checkpoint took to write.",
)
FAMILIES = [TIMESTAMP, STEP, DURATION]


def render(checkpoints: list[tuple[Run, Checkpoint]], lines: Lines) -> None:
    """Write one gauge triple per running run that has checkpointed at least once."""
    labels = [
        label_str((("namespace", run.queue.namespace), ("job_name", run.name)))
        for run, _ in checkpoints
    ]
    for family, attr, fmt in (
        (TIMESTAMP, "timestamp", big),
        (STEP, "step", big),
        (DURATION, "duration", num),
    ):
        lines.family(family)
        for (_run, checkpoint), label in zip(checkpoints, labels, strict=True):
            lines.sample(family.name, label, fmt(getattr(checkpoint, attr)))
