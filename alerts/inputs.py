"""Fetch what one evaluation reads from the ingest tables, with a few set-based queries.

Dense series only over the look-back the enabled rules need, and only for the
GPUs / ports that match the rules' prefilters; error counters and XIDs sparse
(rows where something happened) over their longer windows; per-node shapes
(throughput, sample times, last samples) aggregated in SQL. See ``alerts.queries``.

Only two reads touch every sample of their window: per-node IB throughput and
the newest GPU sample per node. Everything else is an index probe: the rare rows
(errors, prefilter candidates) through partial indexes on ``ts`` (ingest
migration 0006), whole series and last samples through the primary keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.db import connection

from runs.selectors import alerting as run_reads

from . import health_inputs
from . import queries as q
from .rules import REGISTRY, RuleSettings
from .rules.data import (
    Assignment,
    EvaluationData,
    FamilyCursor,
    GpuPoint,
    IbErrorPoint,
    IbPoint,
    IbPortInfo,
    KueuePoint,
    NodeThroughput,
    NvlinkPoint,
    RunCheckpoints,
    XidPoint,
)

# Sparse or small datasets: (EvaluationData attribute, SQL, family whose cursor ends the window, row type).
SPARSE = {
    "xids": ("xids", q.XIDS, "gpu", XidPoint),
    "ib_errors": ("ib_errors", q.IB_ERRORS, "ib", IbErrorPoint),
    "kueue": ("kueue", q.KUEUE, "kueue", KueuePoint),
}
#: Sparse datasets read from raw samples (hot and compacted): their bounds go in twice.
RAW_SPARSE = {"ib_errors"}
# Dense and per-node datasets of the two raw tables (see _fetch_gpu, _fetch_ib).
GPU_DATASETS = ("gpu", "nvlink", "gpu_times")
IB_DATASETS = ("ib", "throughput")


#: Seconds spent per query of the last fetch (for the bench and ``Evaluation.timings``).
LAST_TIMINGS: dict[str, float] = {}


def _rows(sql: str, params: Iterable[Any] | dict[str, Any], label: str = "") -> list[tuple]:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(sql, params if isinstance(params, dict) else list(params))
        rows = cursor.fetchall()
    if label:
        LAST_TIMINGS[label] = time.perf_counter() - started
    return rows


def _timed(label: str, read: Callable[..., list[Any]], *args: Any) -> list[Any]:
    """``read(*args)``, its duration kept in ``LAST_TIMINGS[label]`` like ``_rows``'."""
    started = time.perf_counter()
    rows = read(*args)
    LAST_TIMINGS[label] = time.perf_counter() - started
    return rows


def max_gap_seconds() -> float:
    """How long a sample counts as current: ALERTS_MAX_SAMPLE_GAP_SECONDS."""
    return float(settings.ALERTS_MAX_SAMPLE_GAP_SECONDS)


Extra = dict[str, list[RuleSettings]] | None  # per rule, more settings to cover (overrides)


def enabled(
    rule_settings: dict[str, RuleSettings], extra: Extra = None
) -> list[tuple[Any, RuleSettings]]:
    """(rule, settings) of every enabled rule, and of its ``extra`` settings (per-pool overrides)."""
    found = [(REGISTRY[rid], rs) for rid, rs in rule_settings.items() if rs.enabled]
    return found + [(REGISTRY[rid], rs) for rid, more in (extra or {}).items()
                    if rule_settings[rid].enabled for rs in more]  # fmt: skip


def lookbacks(
    rule_settings: dict[str, RuleSettings], max_gap: float, extra: Extra = None
) -> dict[str, float]:
    """Seconds of data each dataset needs: the largest look-back of the enabled rules reading it."""
    needed: dict[str, float] = {}
    for rule, rs in enabled(rule_settings, extra):
        for dataset in rule.needs:
            needed[dataset] = max(needed.get(dataset, 0.0), rule.lookback(rs, max_gap))
    return needed


def prefilters(
    rule_settings: dict[str, RuleSettings], extra: Extra = None
) -> dict[str, tuple[str, list[Any]] | None]:
    """Per dense dataset, the OR of its readers' prefilters; None when one reader needs every series."""
    combined: dict[str, tuple[str, list[Any]] | None] = {}
    for rule, rs in enabled(rule_settings, extra):
        own = rule.prefilter(rs)
        for dataset in set(rule.needs) & {"gpu", "ib"}:
            if dataset in combined and combined[dataset] is None:
                continue
            if dataset not in own:
                combined[dataset] = None
                continue
            sql, params = own[dataset]
            if dataset in combined:
                old_sql, old_params = combined[dataset]  # type: ignore[misc]
                sql, params = f"({old_sql}) OR ({sql})", [*old_params, *params]
            combined[dataset] = (sql, params)
    return combined


def fetch(
    rule_settings: dict[str, RuleSettings],
    now: float | None = None,
    previous: dict[str, float] | None = None,
    span: float | None = None,
    extra: Extra = None,
) -> EvaluationData:
    """All the data the enabled rules need, as of each family's ingest cursor.

    ``previous`` is the data time of the last evaluation per family: when ingest
    caught up a gap in one cycle, the windows reach back to it (at most
    ALERTS_MAX_CATCHUP_SECONDS more), so no stored step goes unjudged. ``span``
    (backtests) widens every window by that many seconds. ``extra``: more settings per rule
    (per-pool / per-GPU-model overrides) whose look-backs and prefilters are covered too.
    """
    now = time.time() if now is None else now
    LAST_TIMINGS.clear()
    gap = max_gap_seconds()
    cursors = [FamilyCursor(*row) for row in _rows(q.CURSORS, [])]
    as_of = {c.family: min(c.covered_until, now) for c in cursors}
    data = EvaluationData(
        now=now, as_of=as_of, max_gap=gap, step=float(settings.INGEST_STEP_SECONDS)
    )
    data.cursors = cursors
    need = {
        dataset: seconds + (span or 0.0)
        for dataset, seconds in lookbacks(rule_settings, gap, extra).items()
    }
    cap = float(settings.ALERTS_MAX_CATCHUP_SECONDS)

    def window(dataset: str, family: str) -> list[float]:
        end = data.as_of_family(family)
        behind = end - (previous or {}).get(family, end)
        start = end - need[dataset] - min(max(0.0, behind), cap)
        data.window_starts[dataset] = min(start, data.window_starts.get(dataset, start))
        return [start, end]

    filters, marks = prefilters(rule_settings, extra), history_marks(rule_settings, extra)
    if need.keys() & set(GPU_DATASETS):
        gpu_filter = (*_predicate(filters, need, "gpu"), marks.get("gpu"))
        _fetch_gpu(data, need, window, gpu_filter, span is not None)
    if need.keys() & set(IB_DATASETS):
        _fetch_ib(data, need, window, (*_predicate(filters, need, "ib"), marks.get("ib")))
    for dataset, (attr, sql, family, row_type) in SPARSE.items():
        if dataset in need:
            bounds = window(dataset, family)
            params = q.twice(bounds) if dataset in RAW_SPARSE else bounds
            setattr(data, attr, list(map(row_type._make, _rows(sql, params, dataset))))
    if "ib_last" in need:
        _fetch_ib_last(data, window)
    if "gpu_health" in need:
        health_inputs.fetch_gpu_health(data, rule_settings, window, _rows)
    if "xid_gone" in need:
        health_inputs.fetch_xid_gone(data, rule_settings, _rows)
    _fetch_shapes(data, rule_settings, need, window)
    return data


def history_marks(rule_settings: dict[str, RuleSettings], extra: Extra = None) -> dict[str, str]:
    """Per dense dataset, the compacted-history mark (``ingest.history``) every enabled
    reader's prefilter implies, where they all name the same one (else no entry)."""
    named: dict[str, set[str | None]] = {}
    for rule, rs in enabled(rule_settings, extra):
        own = rule.history_mark(rs)
        for dataset in set(rule.needs) & {"gpu", "ib"}:
            named.setdefault(dataset, set()).add(own.get(dataset))
    return {d: next(iter(m)) for d, m in named.items() if len(m) == 1 and None not in m}  # type: ignore[misc]


def _predicate(filters: dict, need: dict[str, float], dataset: str) -> tuple[str, list[Any]]:
    """The SQL predicate selecting the series of ``dataset`` to fetch whole ("false": none needed)."""
    if dataset not in need:
        return "false", []
    return filters.get(dataset) or ("true", [])


def _fetch_gpu(data: EvaluationData, need: dict[str, float], window: Any,
               predicate: tuple[str, list[Any], str | None], backtest: bool) -> None:  # fmt: skip
    """Prefilter candidates' whole series, NVLink error steps, node sample times: index-backed."""
    if "gpu" in need:
        sql, params, mark = predicate
        bounds = q.twice(window("gpu", "gpu"))
        series = q.gpu_candidates(mark, sql)
        data.gpu = list(map(GpuPoint._make, _rows(series, [*bounds, *params, *bounds], "gpu")))
    if "nvlink" in need:
        rows = _rows(q.NVLINK, q.twice(window("nvlink", "gpu")), "nvlink")
        data.nvlink = sorted(map(NvlinkPoint._make, rows))
    if "gpu_times" in need:
        sql = q.GPU_TIMES if backtest else q.GPU_LAST
        rows = _rows(sql, q.twice(window("gpu_times", "gpu")), "gpu_times")
        data.sample_times = {("gpu", node): sorted(times) for node, times in rows}


def _fetch_ib(
    data: EvaluationData,
    need: dict[str, float],
    window: Any,
    predicate: tuple[str, list[Any], str | None],
) -> None:
    """Per-node throughput (hence IB sample times), and the whole series of the prefilter's candidates."""
    if "throughput" in need:
        rows = _rows(q.IB_THROUGHPUT, window("throughput", "ib"), "ib_throughput")
        data.throughput = list(map(NodeThroughput._make, rows))
        times: dict[str, list[float]] = {}
        for node, ts, _ in rows:  # one row per node and sample time: its IB sample times
            times.setdefault(node, []).append(ts)
        ib_times = {("ib", node): sorted(seq) for node, seq in times.items()}
        data.sample_times = {**(data.sample_times or {}), **ib_times}
    if "ib" in need:
        sql, params, mark = predicate
        bounds = q.twice(window("ib", "ib"))
        rows = _rows(q.ib_candidates(mark, sql), [*bounds, *params, *bounds], "ib")
        data.ib = list(map(IbPoint._make, rows))


def _fetch_ib_last(data: EvaluationData, window: Any) -> None:
    """Newest IB sample of the nodes with a non-active port sample (what ``ib_link_flap`` asks)."""
    nodes = sorted({pt.node for pt in data.ib_errors if pt.state is not None and pt.state != 4})
    if nodes:
        bounds = window("ib_last", "ib")
        rows = _rows(q.IB_LAST, [*bounds, nodes, *bounds], "ib_last")
    else:
        rows = []
    data.ib_last = dict(rows)


def _fetch_shapes(data: EvaluationData, rule_settings: dict[str, RuleSettings], need: dict[str, float],
                  window: Any) -> None:  # fmt: skip
    """Dimension tables and per-node shapes."""
    if "assignments" in need:
        start = min(window("assignments", "gpu")[0], window("assignments", "ib")[0])
        data.assignments = list(
            map(Assignment._make, _timed("assignments", run_reads.stays_between, start, data.now))
        )
    if "runs" in need:
        data.runs = _runs(rule_settings, data.as_of_family("checkpoints"), data.max_gap)
    if "leaf_switches" in need:
        data.leaf_switches = _leaf_switches(data)
    if "ib_ports" in need:  # peer groups matter only when some port is a candidate
        rows = _rows(q.IB_PORTS, [], "ib_ports") if data.ib else []
        data.ib_ports = list(map(IbPortInfo._make, rows))
    if "last_seen" in need:
        forget = float(rule_settings["node_metrics_missing"].params["forget_after_seconds"])
        data.last_seen = _last_seen(data, need, forget)


def _leaf_switches(data: EvaluationData) -> dict[tuple[str, str, int], str]:
    """Leaf switch of each port the port rules can report on: those of the fetched IB rows."""
    ports = sorted({(pt.node, pt.device, pt.port) for pt in [*data.ib, *data.ib_errors]})
    if not ports:
        return {}
    rows = _rows(q.LEAF_SWITCHES, [list(column) for column in zip(*ports, strict=True)])
    return {(node, device, port): leaf for node, device, port, leaf in rows}


def _runs(rule_settings: dict[str, RuleSettings], as_of: float, gap: float) -> list[RunCheckpoints]:
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
        for ns, name, running, marks in _timed("runs", run_reads.running_runs, as_of, history, gap)
    ]


def _last_seen(
    data: EvaluationData, need: dict[str, float], forget: float
) -> dict[tuple[str, str], float]:
    """Newest sample before the window of the known nodes absent from it (index-backed, per family)."""
    seen: dict[tuple[str, str], float] = {}
    for family in ("gpu", "ib"):
        present = sorted(data.node_sample_times(family))
        end = data.as_of_family(family)
        start_of_window = end - need.get("gpu_times" if family == "gpu" else "throughput", 0.0)
        bounds = q.twice([end - forget, start_of_window])
        for node, ts in _rows(q.LAST_SEEN[family], [*bounds, end - forget, present]):
            seen[(family, node)] = ts
    return seen
