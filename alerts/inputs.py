"""Fetch what one evaluation reads from the ingest tables, with a few set-based queries.

Raw SQL against ingest's tables (read-only): dense series only over the
look-back the enabled rules need; error counters and XIDs sparse (rows where
something happened) over their longer windows. Times come back as unix seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import connection

from .rules import REGISTRY, RuleSettings
from .rules.data import (
    Assignment,
    EvaluationData,
    FamilyCursor,
    GpuPoint,
    IbErrorPoint,
    IbPoint,
    KueuePoint,
    NvlinkPoint,
    RunCheckpoints,
    XidPoint,
)

EPOCH = "extract(epoch from {})::float8"

GPU_SQL = f"""
SELECT n.name, s.gpu, {EPOCH.format("s.ts")}, s.util, s.tensor, s.sm, s.power
FROM ingest_gpusample s JOIN ingest_node n ON n.id = s.node_id
WHERE s.ts > to_timestamp(%s) AND s.ts <= to_timestamp(%s)
ORDER BY n.name, s.gpu, s.ts
"""
NVLINK_SQL = f"""
SELECT n.name, s.gpu, {EPOCH.format("s.ts")}, coalesce(s.nvlink_crc_flit, 0), coalesce(s.nvlink_crc_data, 0)
FROM ingest_gpusample s JOIN ingest_node n ON n.id = s.node_id
WHERE s.ts > to_timestamp(%s) AND s.ts <= to_timestamp(%s)
  AND (s.nvlink_crc_flit > 0 OR s.nvlink_crc_data > 0)
ORDER BY n.name, s.gpu, s.ts
"""
IB_SQL = f"""
SELECT n.name, p.device, p.port, {EPOCH.format("s.ts")}, s.tx_bytes, s.rx_bytes, s.xmit_wait,
       s.state, s.saturated
FROM ingest_ibsample s JOIN ingest_ibport p ON p.id = s.port_id JOIN ingest_node n ON n.id = p.node_id
WHERE s.ts > to_timestamp(%s) AND s.ts <= to_timestamp(%s)
ORDER BY n.name, p.device, p.port, s.ts
"""
IB_ERRORS_SQL = f"""
SELECT n.name, p.device, p.port, {EPOCH.format("s.ts")}, coalesce(s.symbol_errors, 0),
       coalesce(s.rcv_errors, 0), coalesce(s.local_link_integrity, 0),
       coalesce(s.excessive_buffer_overrun, 0), coalesce(s.link_downed, 0),
       coalesce(s.link_error_recovery, 0), s.state
FROM ingest_ibsample s JOIN ingest_ibport p ON p.id = s.port_id JOIN ingest_node n ON n.id = p.node_id
WHERE s.ts > to_timestamp(%s) AND s.ts <= to_timestamp(%s)
  AND (s.symbol_errors > 0 OR s.rcv_errors > 0 OR s.local_link_integrity > 0
       OR s.excessive_buffer_overrun > 0 OR s.link_downed > 0 OR s.link_error_recovery > 0
       OR s.state <> 4)
ORDER BY n.name, p.device, p.port, s.ts
"""
XID_SQL = f"""
SELECT n.name, x.gpu, {EPOCH.format("x.ts")}, x.code, x.message
FROM ingest_xidevent x JOIN ingest_node n ON n.id = x.node_id
WHERE x.ts > to_timestamp(%s) AND x.ts <= to_timestamp(%s)
ORDER BY n.name, x.gpu, x.ts
"""
KUEUE_SQL = f"""
SELECT q.name, {EPOCH.format("s.ts")}, s.pending_active, s.pending_inadmissible, s.admitted
FROM ingest_kueuesample s JOIN ingest_clusterqueue q ON q.id = s.cluster_queue_id
WHERE s.ts > to_timestamp(%s) AND s.ts <= to_timestamp(%s)
ORDER BY q.name, s.ts
"""
ASSIGNMENT_SQL = f"""
SELECT n.name, p.namespace, p.name, j.name, {EPOCH.format("a.first_seen")}, {EPOCH.format("a.last_seen")}
FROM ingest_podassignment a JOIN ingest_pod p ON p.id = a.pod_id JOIN ingest_job j ON j.id = p.job_id
JOIN ingest_node n ON n.id = a.node_id
WHERE a.last_seen >= to_timestamp(%s) AND a.first_seen <= to_timestamp(%s)
"""
RUNS_SQL = f"""
SELECT j.namespace, j.name, j.state = 'running', array_agg({EPOCH.format("c.ts")} ORDER BY c.ts)
FROM ingest_job j JOIN LATERAL (
    SELECT ts FROM ingest_checkpoint WHERE job_id = j.id AND ts <= to_timestamp(%s) ORDER BY ts DESC LIMIT %s
) c ON true
WHERE j.state = 'running'
GROUP BY j.id
"""
LEAF_SQL = """
SELECT n.name, p.device, p.port, p.leaf_switch
FROM ingest_ibport p JOIN ingest_node n ON n.id = p.node_id WHERE p.leaf_switch <> ''
"""
CURSOR_SQL = f"""
SELECT c.family, {EPOCH.format("c.covered_until")}, {EPOCH.format("h.last_success")}
FROM ingest_ingestcursor c LEFT JOIN ingest_familyhealth h ON h.family = c.family
"""
# Per absent node, through the primary keys (node_id, gpu, ts) and (port_id, ts): a few index probes.
LAST_SEEN_SQL = {
    "gpu": f"""SELECT n.name, {EPOCH.format("x.ts")} FROM ingest_node n CROSS JOIN LATERAL (
        SELECT max(s.ts) AS ts FROM ingest_gpusample s
        WHERE s.node_id = n.id AND s.ts > to_timestamp(%s) AND s.ts <= to_timestamp(%s)) x
        WHERE x.ts IS NOT NULL AND n.last_seen > to_timestamp(%s) AND n.name <> ALL(%s)""",
    "ib": f"""SELECT n.name, {EPOCH.format("x.ts")} FROM ingest_node n CROSS JOIN LATERAL (
        SELECT max(s.ts) AS ts FROM ingest_ibsample s
        WHERE s.port_id IN (SELECT id FROM ingest_ibport WHERE node_id = n.id)
          AND s.ts > to_timestamp(%s) AND s.ts <= to_timestamp(%s)) x
        WHERE x.ts IS NOT NULL AND n.last_seen > to_timestamp(%s) AND n.name <> ALL(%s)""",
}


def _rows(sql: str, params: Iterable[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.fetchall()


def max_gap_seconds() -> float:
    """How long a sample counts as current: ALERTS_MAX_SAMPLE_GAP_SECONDS."""
    return float(settings.ALERTS_MAX_SAMPLE_GAP_SECONDS)


def lookbacks(rule_settings: dict[str, RuleSettings], max_gap: float) -> dict[str, float]:
    """Seconds of data each dataset needs: the largest look-back of the enabled rules reading it."""
    needed: dict[str, float] = {}
    for rule_id, rs in rule_settings.items():
        if not rs.enabled:
            continue
        rule = REGISTRY[rule_id]
        for dataset in rule.needs:
            needed[dataset] = max(needed.get(dataset, 0.0), rule.lookback(rs, max_gap))
    return needed


# dataset → (EvaluationData attribute, SQL, family whose cursor ends the window, row type)
SERIES = {
    "gpu": ("gpu", GPU_SQL, "gpu", GpuPoint),
    "nvlink": ("nvlink", NVLINK_SQL, "gpu", NvlinkPoint),
    "xids": ("xids", XID_SQL, "gpu", XidPoint),
    "ib": ("ib", IB_SQL, "ib", IbPoint),
    "ib_errors": ("ib_errors", IB_ERRORS_SQL, "ib", IbErrorPoint),
    "kueue": ("kueue", KUEUE_SQL, "kueue", KueuePoint),
}


def fetch(
    rule_settings: dict[str, RuleSettings],
    now: float | None = None,
    previous: dict[str, float] | None = None,
    span: float | None = None,
) -> EvaluationData:
    """All the data the enabled rules need, as of each family's ingest cursor.

    ``previous`` is the data time of the last evaluation per family: when ingest
    caught up a gap in one cycle, the windows reach back to it (at most
    ALERTS_MAX_CATCHUP_SECONDS more), so no stored step goes unjudged. ``span``
    (backtests) widens every window by that many seconds.
    """
    now = time.time() if now is None else now
    gap = max_gap_seconds()
    cursors = [FamilyCursor(*row) for row in _rows(CURSOR_SQL, [])]
    as_of = {c.family: min(c.covered_until, now) for c in cursors}
    data = EvaluationData(
        now=now, as_of=as_of, max_gap=gap, step=float(settings.INGEST_STEP_SECONDS)
    )
    data.cursors = cursors
    need = {
        dataset: seconds + (span or 0.0)
        for dataset, seconds in lookbacks(rule_settings, gap).items()
    }
    cap = float(settings.ALERTS_MAX_CATCHUP_SECONDS)

    def window(dataset: str, family: str) -> tuple[float, float]:
        end = data.as_of_family(family)
        behind = end - (previous or {}).get(family, end)
        return end - need[dataset] - min(max(0.0, behind), cap), end

    for dataset, (attr, sql, family, row_type) in SERIES.items():
        if dataset in need:
            setattr(data, attr, list(map(row_type._make, _rows(sql, window(dataset, family)))))
    if "assignments" in need:
        start = min(window("assignments", "gpu")[0], window("assignments", "ib")[0])
        data.assignments = list(map(Assignment._make, _rows(ASSIGNMENT_SQL, [start, now])))
    if "runs" in need:
        data.runs = _runs(rule_settings, data.as_of_family("checkpoints"))
    if "leaf_switches" in need:
        data.leaf_switches = {(n, d, p): leaf for n, d, p, leaf in _rows(LEAF_SQL, [])}
    if "last_seen" in need:
        forget = float(rule_settings["node_metrics_missing"].params["forget_after_seconds"])
        data.last_seen = _last_seen(data, need, forget)
    return data


def _runs(rule_settings: dict[str, RuleSettings], as_of: float) -> list[RunCheckpoints]:
    """Running runs with their latest checkpoints (as many as the largest ``history`` + 1)."""
    history = 1 + max(
        (
            int(rs.params.get("history", 10))
            for rs in rule_settings.values()
            if "runs" in REGISTRY[rs.rule].needs
        ),
        default=10,
    )
    return [
        RunCheckpoints(ns, name, running, tuple(marks))
        for ns, name, running, marks in _rows(RUNS_SQL, [as_of, history])
    ]


def _last_seen(
    data: EvaluationData, need: dict[str, float], forget: float
) -> dict[tuple[str, str], float]:
    """Newest sample before the dense window of the nodes absent from it (index-backed, per family)."""
    seen: dict[tuple[str, str], float] = {}
    for family, points in (("gpu", data.gpu), ("ib", data.ib)):
        present = sorted({pt.node for pt in points})
        end = data.as_of_family(family)
        start_of_window = end - need.get(family, 0.0)
        for node, ts in _rows(
            LAST_SEEN_SQL[family], [end - forget, start_of_window, end - forget, present]
        ):
            seen[(family, node)] = ts
    return seen
