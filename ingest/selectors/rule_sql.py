"""The SQL behind ``rule_inputs``: every read the alert rules make of ingest's tables.

Times come back as unix seconds. ``{pred}`` placeholders take a rule's prefilter predicate
(see ``alerts.rules.base.BaseRule.prefilter``); window bounds are unix seconds. Raw samples
are read through ``ingest_gpu_rows`` / ``ingest_ib_rows`` (``ingest.history``): hot rows and
compacted history alike.
"""

from __future__ import annotations

from ..history import columns_in, gpu_rows, ib_rows
from ..models.choices import Family

EPOCH = "extract(epoch from {})::float8"
WINDOW = "ts > to_timestamp(%s) AND ts <= to_timestamp(%s)"
# Raw samples, hot and compacted alike (ingest.history), over the window's bounds: every
# query reading them takes its window's two bounds twice (``twice``), for the call and WINDOW.
BOUNDS = ("to_timestamp(%s)", "to_timestamp(%s)")
# Each read names the value columns it uses: compacted history decodes only those.
GPU_TIMES_ONLY, IB_TIMES_ONLY = gpu_rows(*BOUNDS, columns=()), ib_rows(*BOUNDS, columns=())
GPU_POINTS = gpu_rows(*BOUNDS, columns=("util", "tensor", "sm", "power"))
IB_POINTS = ib_rows(
    *BOUNDS, columns=("tx_bytes", "rx_bytes", "xmit_wait", "state", "saturated", "rate")
)


def twice(bounds: list[float]) -> list[float]:
    """The parameters of a window read through ``gpu_rows`` / ``ib_rows`` and WINDOW."""
    return [*bounds, *bounds]


def gpu_candidates(mark: str | None, pred: str) -> str:
    """GPU_SERIES for the prefilter ``pred``, its candidates' history rows limited to ``mark``."""
    return GPU_SERIES.replace("{keys}", gpu_candidate_keys(mark, pred))


def gpu_candidate_keys(mark: str | None, pred: str) -> str:
    """(node_id, gpu) of the GPUs with a row matching the prefilter ``pred`` in the window
    (parameters: the window twice, then the predicate's)."""
    rows = gpu_rows(*BOUNDS, mark, columns=columns_in(Family.GPU, pred))
    return f"SELECT DISTINCT node_id, gpu FROM {rows} s WHERE {WINDOW} AND ({pred})"


def ib_candidates(mark: str | None, pred: str) -> str:
    """IB_SERIES for the prefilter ``pred``, its candidates' history rows limited to ``mark``."""
    rows = ib_rows(*BOUNDS, mark, columns=columns_in(Family.IB, pred))
    return IB_SERIES.replace("{candidates}", rows).replace("{pred}", pred)


GPU_COLUMNS = f"n.name, s.gpu, {EPOCH.format('s.ts')}, s.util, s.tensor, s.sm, s.power"
IB_COLUMNS = f"n.name, p.device, p.port, {EPOCH.format('s.ts')}, s.tx_bytes, s.rx_bytes, s.xmit_wait, s.state, s.saturated, s.rate"
# Whole series of the GPUs with a row matching the dense prefilter ({pred}) in the window.
# With the default thresholds the candidates come from the partial index ingest_gpusample_drift_ts;
# OFFSET 0 keeps the series a primary-key probe per candidate (the planner cannot know how
# few candidates there are, and would scan the window instead). In compacted history the
# candidates come from the rows marked for the same predicate (``gpu_candidates``).
GPU_SERIES = f"""
WITH c AS ({{keys}})
SELECT {GPU_COLUMNS} FROM c JOIN ingest_node n ON n.id = c.node_id CROSS JOIN LATERAL (
    SELECT * FROM {GPU_POINTS} r WHERE node_id = c.node_id AND gpu = c.gpu AND {WINDOW} OFFSET 0
) s ORDER BY n.name, s.gpu, s.ts
"""
# The whole series of given GPUs (a backtest's batch of candidates: two arrays, node ids and
# GPU indices, then the window twice).
GPU_SERIES_OF = GPU_SERIES.replace(
    "{keys}", "SELECT * FROM unnest(%s::bigint[], %s::int[]) AS k(node_id, gpu)"
)
# Steps where NVLink error counters increased (sparse: the partial index ingest_gpusample_nvlink_ts).
NVLINK = f"""
SELECT n.name, s.gpu, {EPOCH.format("s.ts")}, coalesce(s.nvlink_crc_flit, 0), coalesce(s.nvlink_crc_data, 0)
FROM {gpu_rows(*BOUNDS, "nvlink", columns=("nvlink_crc_flit", "nvlink_crc_data"))} s JOIN ingest_node n ON n.id = s.node_id
WHERE s.{WINDOW} AND (s.nvlink_crc_flit > 0 OR s.nvlink_crc_data > 0)
"""
# Each node's newest GPU sample in the window (live), or all its sample times (backtests).
GPU_LAST = f"""
SELECT n.name, ARRAY[x.t] FROM (
    SELECT node_id, {EPOCH.format("max(ts)")} AS t FROM {GPU_TIMES_ONLY} s WHERE {WINDOW} GROUP BY node_id
) x JOIN ingest_node n ON n.id = x.node_id
"""
GPU_TIMES = f"""
SELECT n.name, x.times FROM (
    SELECT node_id, array_agg(DISTINCT {EPOCH.format("ts")}) AS times
    FROM {GPU_TIMES_ONLY} s WHERE {WINDOW} GROUP BY node_id
) x JOIN ingest_node n ON n.id = x.node_id
"""
# Per node and step, tx + rx over all its ports (also gives each node's IB sample times):
# ingest keeps these totals (ingest_ibnodestep, refreshed with the rollups in the commit).
IB_THROUGHPUT = f"""
SELECT n.name, {EPOCH.format("s.ts")}, s.bytes
FROM ingest_ibnodestep s JOIN ingest_node n ON n.id = s.node_id WHERE s.{WINDOW}
"""
# Whole series of the ports with a row matching {pred} in the window. With the default
# thresholds the candidates come from the partial index ingest_ibsample_wait_ts (OFFSET 0: as above).
IB_SERIES = f"""
WITH c AS (SELECT DISTINCT port_id FROM {{candidates}} s WHERE {WINDOW} AND ({{pred}}))
SELECT {IB_COLUMNS} FROM c JOIN ingest_ibport p ON p.id = c.port_id
JOIN ingest_node n ON n.id = p.node_id CROSS JOIN LATERAL (
    SELECT * FROM {IB_POINTS} r WHERE port_id = c.port_id AND {WINDOW} OFFSET 0
) s ORDER BY n.name, p.device, p.port, s.ts
"""
# Newest IB sample of the given nodes, through the primary key (port_id, ts).
IB_LAST = f"""
SELECT n.name, {EPOCH.format("max(s.ts)")} FROM ingest_node n JOIN ingest_ibport p ON p.node_id = n.id
JOIN {IB_TIMES_ONLY} s ON s.port_id = p.id AND s.node_id = n.id
WHERE n.name = ANY(%s) AND s.{WINDOW} GROUP BY n.name
"""
IB_ERROR_COLUMNS = (
    "symbol_errors", "rcv_errors", "local_link_integrity", "excessive_buffer_overrun",
    "link_downed", "link_error_recovery", "state",
)  # fmt: skip
# Sparse: the partial index ingest_ibsample_errors_ts holds exactly the rows matching this predicate.
IB_ERRORS = f"""
SELECT n.name, p.device, p.port, {EPOCH.format("s.ts")}, coalesce(s.symbol_errors, 0),
       coalesce(s.rcv_errors, 0), coalesce(s.local_link_integrity, 0),
       coalesce(s.excessive_buffer_overrun, 0), coalesce(s.link_downed, 0),
       coalesce(s.link_error_recovery, 0), s.state
FROM {ib_rows(*BOUNDS, "errors", columns=IB_ERROR_COLUMNS)} s JOIN ingest_ibport p ON p.id = s.port_id
JOIN ingest_node n ON n.id = p.node_id
WHERE s.{WINDOW}
  AND (s.symbol_errors > 0 OR s.rcv_errors > 0 OR s.local_link_integrity > 0
       OR s.excessive_buffer_overrun > 0 OR s.link_downed > 0 OR s.link_error_recovery > 0
       OR s.state <> 4)
ORDER BY n.name, p.device, p.port, s.ts
"""
XIDS = f"""
SELECT n.name, x.gpu, {EPOCH.format("x.ts")}, x.code, x.message
FROM ingest_xidevent x JOIN ingest_node n ON n.id = x.node_id
WHERE x.{WINDOW} ORDER BY n.name, x.gpu, x.ts
"""
# Sparse: the partial index ingest_gpusample_health_ts (ingest 0012) holds the hot rows matching
# this predicate with the default throttle mask ({mask}: gpu_throttle's reasons_mask, an int).
# History has no mark for it: the hours of the window that are compacted are decoded (health
# columns only). Its bounds go in twice (``twice``).
GPU_HEALTH_COLUMNS = (
    "ecc_dbe_vol", "pcie_replay", "row_remap_failure", "row_remap_pending", "clock_events",
)  # fmt: skip
GPU_HEALTH = f"""
SELECT n.name, s.gpu, {EPOCH.format("s.ts")}, coalesce(s.ecc_dbe_vol, 0), coalesce(s.pcie_replay, 0),
       coalesce(s.row_remap_failure, 0), coalesce(s.row_remap_pending, 0), coalesce(s.clock_events, 0)::int
FROM {gpu_rows(*BOUNDS, columns=GPU_HEALTH_COLUMNS)} s JOIN ingest_node n ON n.id = s.node_id
WHERE s.{WINDOW}
  AND (s.ecc_dbe_vol > 0 OR s.pcie_replay > 0 OR s.row_remap_failure > 0 OR s.row_remap_pending > 0
       OR (s.clock_events::int & {{mask}}) <> 0)
ORDER BY n.name, s.gpu, s.ts
"""
# Each GPU's latest XID event (over the forget horizon) whose code means the GPU is gone, and the
# first sample of that GPU after the event that follows a gap longer than the sample gap: the GPU
# reporting again. (Stale samples right after the event, e.g. Prometheus' look-back over
# backfilled blocks, have no gap before them and do not count.) Primary-key probes per such GPU.
# The GPU's sample times (hot or compacted) from twice the gap before the event to the window's end.
XID_GONE_SAMPLES = gpu_rows(
    "x.ts - make_interval(secs => 2 * %(gap)s)", "to_timestamp(%(end)s)", columns=()
)
XID_GONE = f"""
WITH x AS (
    SELECT DISTINCT ON (node_id, gpu) node_id, gpu, ts, code, message FROM ingest_xidevent
    WHERE ts > to_timestamp(%(start)s) AND ts <= to_timestamp(%(end)s) ORDER BY node_id, gpu, ts DESC
)
SELECT n.name, x.gpu, {EPOCH.format("x.ts")}, x.code, x.message, {EPOCH.format("r.ts")}
FROM x JOIN ingest_node n ON n.id = x.node_id LEFT JOIN LATERAL (
    SELECT min(g.ts) AS ts FROM (
        SELECT ts, lag(ts) OVER (ORDER BY ts) AS prev FROM {XID_GONE_SAMPLES}
        WHERE node_id = x.node_id AND gpu = x.gpu
          AND ts > x.ts - make_interval(secs => 2 * %(gap)s) AND ts <= to_timestamp(%(end)s)
    ) g WHERE g.ts > x.ts AND (g.prev IS NULL OR g.ts - g.prev > make_interval(secs => %(gap)s))
) r ON true
WHERE x.code = ANY(%(codes)s)
ORDER BY n.name, x.gpu
"""
KUEUE = f"""
SELECT q.name, {EPOCH.format("s.ts")}, s.pending_active, s.pending_inadmissible, s.admitted
FROM ingest_kueuesample s JOIN ingest_clusterqueue q ON q.id = s.cluster_queue_id
WHERE s.{WINDOW} ORDER BY q.name, s.ts
"""
# Leaf switches of the given (node, device, port) keys: the ports the port rules may report.
LEAF_SWITCHES = """
SELECT n.name, p.device, p.port, p.leaf_switch
FROM unnest(%s::text[], %s::text[], %s::int[]) AS k(node, device, port)
JOIN ingest_node n ON n.name = k.node JOIN ingest_ibport p ON p.node_id = n.id
WHERE p.device = k.device AND p.port = k.port AND p.leaf_switch <> ''
"""
# Every IB port with its leaf switch: ib_congestion's peer groups (a few thousand rows).
IB_PORTS = """
SELECT n.name, p.device, p.port, p.leaf_switch
FROM ingest_ibport p JOIN ingest_node n ON n.id = p.node_id ORDER BY n.name, p.device, p.port
"""
CURSORS = f"""
SELECT c.family, {EPOCH.format("c.covered_until")}, {EPOCH.format("h.last_success")}
FROM ingest_ingestcursor c LEFT JOIN ingest_familyhealth h ON h.family = c.family
"""
# Newest sample of each known node absent from the window, through the primary keys
# (node_id, gpu, ts) and (port_id, ts): a few index probes per absent node.
LAST_SEEN = {
    Family.GPU: f"""SELECT n.name, {EPOCH.format("x.ts")} FROM ingest_node n CROSS JOIN LATERAL (
        SELECT max(s.ts) AS ts FROM {GPU_TIMES_ONLY} s
        WHERE s.node_id = n.id AND s.{WINDOW}) x
        WHERE x.ts IS NOT NULL AND n.last_seen > to_timestamp(%s) AND n.name <> ALL(%s)""",
    Family.IB: f"""SELECT n.name, {EPOCH.format("x.ts")} FROM ingest_node n CROSS JOIN LATERAL (
        SELECT max(s.ts) AS ts FROM {IB_TIMES_ONLY} s
        WHERE s.port_id IN (SELECT id FROM ingest_ibport WHERE node_id = n.id) AND s.{WINDOW}) x
        WHERE x.ts IS NOT NULL AND n.last_seen > to_timestamp(%s) AND n.name <> ALL(%s)""",
}
