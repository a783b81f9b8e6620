"""A run's checkpoints as stored, and the one JSON shape of a checkpoint (push answer, run detail)."""

from __future__ import annotations

from ..models import Checkpoint, Job


def run_checkpoints(job: Job) -> list[Checkpoint]:
    """Every checkpoint of the run, oldest first."""
    return list(Checkpoint.objects.filter(job=job).order_by("ts"))


def checkpoint_json(checkpoint: Checkpoint) -> dict[str, object]:
    """The API shape of one checkpoint."""
    return {
        "step": checkpoint.step,
        "time": checkpoint.ts.isoformat(),
        "duration_seconds": checkpoint.duration_seconds,
        "bytes": checkpoint.bytes,
        "path": checkpoint.path,
        "source": checkpoint.source,
    }
