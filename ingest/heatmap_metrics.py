"""How each heatmap metric becomes one number per node and bucket.

"inner" combines a node's GPUs/ports at one timestamp, "outer" combines the
timestamps of a bucket. The per-node 5-minute rollups (``ingest_noderollup``)
store ``inner`` over the per-GPU / per-port rollups of each 5-minute bucket in
``column``, so a long-window heatmap only applies ``outer``. The SQL builders at
the end turn a metric into the heatmap query ``ingest.selectors.heatmap_rows`` runs.
"""

from __future__ import annotations

from dataclasses import dataclass

IB_ERROR_SUM = (
    "coalesce(symbol_errors,0) + coalesce(link_downed,0) + coalesce(link_error_recovery,0) + "
    "coalesce(rcv_errors,0) + coalesce(local_link_integrity,0) + coalesce(excessive_buffer_overrun,0)"
)
NVLINK_ERROR_SUM = (
    "coalesce(nvlink_crc_flit,0) + coalesce(nvlink_crc_data,0) + coalesce(nvlink_replay,0) + "
    "coalesce(nvlink_recovery,0)"
)


@dataclass(frozen=True)
class DriftThresholds:
    """When a GPU's 5-minute bucket counts as drifted: util says busy, tensor cores idle."""

    util_min_percent: float = 50.0
    tensor_max_ratio: float = 0.10


DRIFTED = DriftThresholds()


@dataclass(frozen=True)
class HeatmapMetric:
    """How a metric becomes one number per node and bucket."""

    family: str  # "gpu" or "ib": which table
    inner: str  # SQL aggregate over the node's GPUs/ports at one ts
    outer: str  # SQL aggregate of the inner values over the bucket's timestamps: avg, sum, min, max
    unit: str
    worst: str  # "high" or "low": which end sorts first with sort="worst"
    per_device: str  # SQL expression per GPU/port for rail_matrix (aggregated with ``outer``)
    column: str  # the ingest_noderollup column holding ``inner`` per 5-minute bucket


HEATMAP_METRICS: dict[str, HeatmapMetric] = {
    # mean utilisation of the node's GPUs, percent
    "gpu_util": HeatmapMetric("gpu", "avg(util)", "avg", "%", "low", "util", "util"),
    # mean tensor-core activity of the node's GPUs, ratio 0..1
    "tensor_active": HeatmapMetric("gpu", "avg(tensor)", "avg", "ratio", "low", "tensor", "tensor"),
    # mean of (util/100 − tensor) over GPUs: "busy" GPUs whose tensor cores idle (hung collective)
    "drift": HeatmapMetric("gpu", "avg(util / 100.0 - tensor)", "avg", "ratio", "high",
                           "util / 100.0 - tensor", "drift"),
    # NVLink bytes/s summed over the node's GPUs
    "nvlink_bw": HeatmapMetric("gpu", "sum(nvlink_bw)", "avg", "B/s", "low", "nvlink_bw", "nvlink_bw"),
    # NVLink error increases (all four counters) summed over GPUs and over the bucket
    "nvlink_errors": HeatmapMetric("gpu", f"sum({NVLINK_ERROR_SUM})", "sum", "errors", "high",
                                   NVLINK_ERROR_SUM, "nvlink_errors"),
    # IB transmit / receive bytes/s summed over the node's ports
    "ib_tx": HeatmapMetric("ib", "sum(tx_bytes)", "avg", "B/s", "low", "tx_bytes", "ib_tx"),
    "ib_rx": HeatmapMetric("ib", "sum(rx_bytes)", "avg", "B/s", "low", "rx_bytes", "ib_rx"),
    # xmit_wait ticks/s summed over ports (congestion)
    "ib_xmit_wait": HeatmapMetric("ib", "sum(xmit_wait)", "avg", "ticks/s", "high", "xmit_wait",
                                  "ib_xmit_wait"),
    # the six IB error counters' increases summed over ports and over the bucket
    "ib_errors": HeatmapMetric("ib", f"sum({IB_ERROR_SUM})", "sum", "errors", "high", IB_ERROR_SUM,
                               "ib_errors"),
    # active ports (state 4) of the node; the bucket shows its minimum (a flap shows)
    "ib_state": HeatmapMetric("ib", "count(*) FILTER (WHERE state = 4)", "min", "ports", "low",
                              "CASE WHEN state = 4 THEN 1 ELSE 0 END", "active_ports"),
}  # fmt: skip

#: Per-family bookkeeping columns of ``ingest_noderollup`` besides the metric columns.
NODE_COUNTS: dict[str, dict[str, str]] = {
    "gpu": {
        "gpus": "count(*)",
        "util_gpus": "count(util)",
        "tensor_gpus": "count(tensor)",
        "drifted_gpus": (
            f"count(*) FILTER (WHERE util >= {DRIFTED.util_min_percent} "
            f"AND tensor <= {DRIFTED.tensor_max_ratio})"
        ),
    },
    "ib": {"ports": "count(*)"},
}
#: The column that says a node had data of a family in a bucket.
PRESENCE_COLUMN = {"gpu": "gpus", "ib": "ports"}


def node_rollup_columns(family: str) -> dict[str, str]:
    """``ingest_noderollup`` column → SQL aggregate over one node's rollup rows of one bucket."""
    metrics = {m.column: m.inner for m in HEATMAP_METRICS.values() if m.family == family}
    return {**NODE_COUNTS[family], **metrics}


#: ``extra_float_digits`` while heatmap cells are printed: float8 text then has
#: DBL_DIG (15) − 11 = 4 significant digits (``%g``), plenty for a colour scale and the
#: hover box. Done by Postgres's own float output: no rounding expression per cell, and
#: 1.235e+10 B/s is shorter than 12345678901.
DISPLAY_FLOAT_DIGITS = -11


def _cell(expr: str) -> str:
    """One heatmap cell as JSON text: the number (see DISPLAY_FLOAT_DIGITS) or ``null``."""
    return f"coalesce(({expr})::float8::text, 'null')"


#: The column index of a row at ``ts``: whole steps since the window start.
COLUMN_INDEX = "floor((date_part('epoch', ts) - %(start_epoch)s) / %(step)s)::int"


def _columns(cells: str, by_ts: bool = False) -> str:
    # One row per column: node ids and cells as comma-separated text, aggregated from the
    # same rows in the same order, so they pair up by position (no per-cell values in Python).
    # ``cells`` has (j, node_id, v) rows, or with ``by_ts`` (one bucket per column: grouping
    # on the stored ts is cheaper than on a computed index) (ts, node_id, v) rows.
    index, key = (COLUMN_INDEX, "ts") if by_ts else ("j", "j")
    return (
        f"SELECT {index}, string_agg(node_id::text, ','), string_agg({_cell('v')}, ',') "
        f"FROM ({cells}) cells GROUP BY {key}"
    )


def raw_heatmap_sql(spec: HeatmapMetric) -> str:
    """(column index, node ids, cells) rows of a heatmap from raw samples (see ``_columns``)."""
    per_ts = (
        f"SELECT node_id, {COLUMN_INDEX} AS j, {spec.inner} AS v FROM ingest_{spec.family}sample "
        f"WHERE ts >= %(start)s AND ts < %(end)s GROUP BY node_id, ts"
    )
    return _columns(f"SELECT j, node_id, {spec.outer}(v) AS v FROM ({per_ts}) p GROUP BY 1, 2")


def node_rollup_heatmap_sql(spec: HeatmapMetric, aligned: bool) -> str:
    """(column index, node ids, cells) rows of a heatmap from the per-node rollups."""
    # A node rollup row already holds ``inner`` for its 5-minute bucket; only ``outer``
    # over the buckets of a wider column is left (none at all for aligned 5-minute columns).
    where = (
        f"FROM ingest_noderollup WHERE ts >= %(start)s AND ts < %(end)s "
        f"AND {PRESENCE_COLUMN[spec.family]} > 0"
    )
    if aligned:
        return _columns(f"SELECT ts, node_id, {spec.column} AS v {where}", by_ts=True)
    return _columns(
        f"SELECT {COLUMN_INDEX} AS j, node_id, {spec.outer}({spec.column}) AS v {where} GROUP BY 1, 2"
    )
