"""What the GPU hardware rules read (``alerts.rules.gpu_health``, ``gpu_xid``'s gone GPUs).

Called by ``alerts.inputs.fetch``; both reads (``ingest.selectors.rule_inputs``) are sparse:
unhealthy sample rows through the partial index ``ingest_gpusample_health_ts``, and the
latest "GPU gone" XID of each GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingest.models.choices import Family
from ingest.selectors import rule_inputs

from .rules import RuleSettings
from .rules.data import EvaluationData

#: SW_THERMAL | HW_THERMAL | HW_SLOWDOWN | HW_POWER_BRAKE: the index's mask (ingest 0012).
DEFAULT_THROTTLE_MASK = 0x20 | 0x40 | 0x08 | 0x80


def fetch_gpu_health(
    data: EvaluationData,
    rule_settings: dict[str, RuleSettings],
    window: Callable[[str, str], list[float]],
) -> None:
    """Unhealthy GPU sample rows of the window (throttled: by ``gpu_throttle``'s mask)."""
    throttle = rule_settings.get("gpu_throttle")
    mask = int(throttle.params["reasons_mask"]) if throttle else DEFAULT_THROTTLE_MASK
    data.gpu_health = rule_inputs.gpu_health(window("gpu_health", Family.GPU), mask)


def fetch_xid_gone(data: EvaluationData, rule_settings: dict[str, RuleSettings]) -> None:
    """The latest XID of each GPU over ``gone_forget_seconds`` when its code means "gone"."""
    params: dict[str, Any] = rule_settings["gpu_xid"].params
    end = data.as_of_family(Family.GPU)
    start = end - float(params["gone_forget_seconds"])
    codes = [int(code) for code in params["gone_codes"]]
    data.xid_gone = rule_inputs.xid_gone(start, end, data.max_gap, codes)
