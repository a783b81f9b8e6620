"""Tensor-core drift: GPU util says busy while the tensor cores idle (docs/domain.md "Drift").

Three measures carry the name, each for its own purpose; the thresholds live here once:

- ``HUNG_GPU``: one raw sample that looks like a hung collective. The defaults of the
  ``gpu_tensor_drift`` rule (alerts/rules/gpu.py; operators may change them per rule) and the
  predicate of the partial index ``ingest_gpusample_drift_ts`` (migration 0006 writes the
  same literal: migrations are frozen, tests/ingest/test_drift.py checks they agree).
- ``IDLE_TENSOR_BUCKET``: a 5-minute GPU bucket, by its means, busy with idle tensor cores:
  a looser bar, for means blur a hang with the healthy samples around it. Counted per node
  into ``ingest_noderollup.drifted_gpus`` when ingest rolls samples up, so fixed once stored;
  the overview shows it as "GPU-hours with idle tensor cores", not as the rule's drift.
- The heatmap's ``drift`` metric, ``util / 100 - tensor`` (ingest/heatmap_metrics.py): a
  continuous score with no threshold at all.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DriftThresholds:
    """Busy by util (percent, at or above) with idle tensor cores (ratio 0..1, at or below)."""

    util_min_percent: float
    tensor_max_ratio: float

    def predicate(self) -> str:
        """The condition as SQL over ``util`` and ``tensor`` columns."""
        return f"util >= {self.util_min_percent:g} AND tensor <= {self.tensor_max_ratio:g}"


HUNG_GPU = DriftThresholds(util_min_percent=90.0, tensor_max_ratio=0.05)
IDLE_TENSOR_BUCKET = DriftThresholds(util_min_percent=50.0, tensor_max_ratio=0.10)
