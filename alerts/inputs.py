"""Fetch what one evaluation reads from the ingest tables, with a few set-based queries.

Dense series only over the look-back the enabled rules need, and only for the
GPUs / ports that match the rules' prefilters; error counters and XIDs sparse
(rows where something happened) over their longer windows; per-node shapes
(throughput, sample times, last samples) aggregated in SQL. The reads themselves are
``ingest.selectors.rule_inputs``: this module decides their windows and prefilters.

Only two reads touch every sample of their window: per-node IB throughput and
the newest GPU sample per node. Everything else is an index probe: the rare rows
(errors, prefilter candidates) through partial indexes on ``ts`` (ingest
migration 0006), whole series and last samples through the primary keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings

from core import clock
from ingest.models.choices import Family
from ingest.selectors import rule_inputs
from runs.selectors import alerting as run_reads

from . import health_inputs
from .rules import REGISTRY, RuleSettings
from .rules.data import Assignment, EvaluationData, GpuPoint, RunCheckpoints

# Sparse or small datasets: (EvaluationData attribute, read, family whose cursor ends the window).
SPARSE: dict[str, tuple[str, Callable[[list[float]], list[Any]], Family]] = {
    "xids": ("xids", rule_inputs.xids, Family.GPU),
    "ib_errors": ("ib_errors", rule_inputs.ib_errors, Family.IB),
    "kueue": ("kueue", rule_inputs.kueue, Family.KUEUE),
}
#: The dense datasets (rules' ``needs``): whole GPU / IB port series, which prefilters narrow.
DENSE = ("gpu", "ib")
# Dense and per-node datasets of the two raw tables (see _fetch_gpu, _fetch_ib).
GPU_DATASETS = ("gpu", "nvlink", "gpu_times")
IB_DATASETS = ("ib", "throughput")


#: Seconds spent per query of the last fetch (for the bench and ``Evaluation.timings``).
LAST_TIMINGS = rule_inputs.TIMINGS


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
        for dataset in set(rule.needs) & set(DENSE):
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
    gpu_keys_only: bool = False,
) -> EvaluationData:
    """All the data the enabled rules need, as of each family's ingest cursor.

    ``previous`` is the data time of the last evaluation per family: when ingest
    caught up a gap in one cycle, the windows reach back to it (at most
    ALERTS_MAX_CATCHUP_SECONDS more), so no stored step goes unjudged. ``span``
    (backtests) widens every window by that many seconds. ``extra``: more settings per rule
    (per-pool / per-GPU-model overrides) whose look-backs and prefilters are covered too.
    ``gpu_keys_only``: the GPU prefilter's candidates are listed (``data.gpu_keys``), their
    series not read (``gpu_batches`` reads them a batch at a time).
    """
    now = clock.now().timestamp() if now is None else now  # the one clock (tests pin it)
    LAST_TIMINGS.clear()
    gap = max_gap_seconds()
    cursors = rule_inputs.cursors()
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
        _fetch_gpu(data, need, window, gpu_filter, span is not None, gpu_keys_only)
    if need.keys() & set(IB_DATASETS):
        ib_filter = (*_predicate(filters, need, "ib"), marks.get("ib"))
        _fetch_ib(data, need, window, ib_filter)
    for dataset, (attr, read, family) in SPARSE.items():
        if dataset in need:
            setattr(data, attr, read(window(dataset, family)))
    if "ib_last" in need:
        _fetch_ib_last(data, window)
    if "gpu_health" in need:
        health_inputs.fetch_gpu_health(data, rule_settings, window)
    if "xid_gone" in need:
        health_inputs.fetch_xid_gone(data, rule_settings)
    _fetch_shapes(data, rule_settings, need, window)
    return data


def history_marks(rule_settings: dict[str, RuleSettings], extra: Extra = None) -> dict[str, str]:
    """Per dense dataset, the compacted-history mark (``ingest.history``) every enabled
    reader's prefilter implies, where they all name the same one (else no entry)."""
    named: dict[str, set[str | None]] = {}
    for rule, rs in enabled(rule_settings, extra):
        own = rule.history_mark(rs)
        for dataset in set(rule.needs) & set(DENSE):
            named.setdefault(dataset, set()).add(own.get(dataset))
    return {d: next(iter(m)) for d, m in named.items() if len(m) == 1 and None not in m}  # type: ignore[misc]


def _predicate(filters: dict, need: dict[str, float], dataset: str) -> tuple[str, list[Any]]:
    """The SQL predicate selecting the series of ``dataset`` to fetch whole ("false": none needed)."""
    if dataset not in need:
        return "false", []
    return filters.get(dataset) or ("true", [])


def _fetch_gpu(data: EvaluationData, need: dict[str, float], window: Any,
               predicate: tuple[str, list[Any], str | None], backtest: bool,
               keys_only: bool = False) -> None:  # fmt: skip
    """Prefilter candidates' whole series, NVLink error steps, node sample times: index-backed."""
    if "gpu" in need and keys_only:
        data.gpu_keys = rule_inputs.gpu_candidate_keys(window("gpu", Family.GPU), predicate)
    elif "gpu" in need:
        data.gpu = rule_inputs.gpu_series(window("gpu", Family.GPU), predicate)
    if "nvlink" in need:
        data.nvlink = rule_inputs.nvlink_steps(window("nvlink", Family.GPU))
    if "gpu_times" in need:
        times = rule_inputs.gpu_sample_times(window("gpu_times", Family.GPU), every=backtest)
        data.sample_times = {(Family.GPU.value, node): seq for node, seq in times.items()}


def gpu_batches(data: EvaluationData, points: int) -> Iterator[list[GpuPoint]]:
    """The whole series of ``data.gpu_keys`` (``fetch(gpu_keys_only=True)``) over the GPU
    window, as many GPUs at a time as hold about ``points`` steps (at least one)."""
    bounds = [data.window_starts["gpu"], data.as_of_family(Family.GPU)]
    size = max(1, int(points * data.step // max(bounds[1] - bounds[0], data.step)))
    for first in range(0, len(data.gpu_keys), size):
        yield rule_inputs.gpu_series_of(bounds, data.gpu_keys[first : first + size])


def _fetch_ib(
    data: EvaluationData,
    need: dict[str, float],
    window: Any,
    predicate: tuple[str, list[Any], str | None],
) -> None:
    """Per-node throughput (hence IB sample times), and the whole series of the prefilter's candidates."""
    if "throughput" in need:
        data.throughput = rule_inputs.ib_throughput(window("throughput", Family.IB))
        times: dict[str, list[float]] = {}
        for node, ts, _ in data.throughput:  # one row per node and sample time: its IB sample times
            times.setdefault(node, []).append(ts)
        ib_times = {(Family.IB.value, node): sorted(seq) for node, seq in times.items()}
        data.sample_times = {**(data.sample_times or {}), **ib_times}
    if "ib" in need:
        data.ib = rule_inputs.ib_series(window("ib", Family.IB), predicate)


def _fetch_ib_last(data: EvaluationData, window: Any) -> None:
    """Newest IB sample of the nodes with a non-active port sample (what ``ib_link_flap`` asks)."""
    nodes = sorted({pt.node for pt in data.ib_errors if pt.state is not None and pt.state != 4})
    data.ib_last = rule_inputs.ib_last(window("ib_last", Family.IB), nodes) if nodes else {}


def _fetch_shapes(data: EvaluationData, rule_settings: dict[str, RuleSettings], need: dict[str, float],
                  window: Any) -> None:  # fmt: skip
    """Dimension tables and per-node shapes."""
    if "assignments" in need:
        start = min(window("assignments", Family.GPU)[0], window("assignments", Family.IB)[0])
        data.assignments = list(
            map(Assignment._make, _timed("assignments", run_reads.stays_between, start, data.now))
        )
    if "runs" in need:
        data.runs = _runs(rule_settings, data.as_of_family(Family.CHECKPOINTS), data.max_gap)
    if "leaf_switches" in need:
        data.leaf_switches = _leaf_switches(data)
    if "ib_ports" in need:  # peer groups matter only when some port is a candidate
        data.ib_ports = rule_inputs.ib_ports() if data.ib else []
    if "last_seen" in need:
        forget = float(rule_settings["node_metrics_missing"].params["forget_after_seconds"])
        data.last_seen = _last_seen(data, need, forget)


def _leaf_switches(data: EvaluationData) -> dict[tuple[str, str, int], str]:
    """Leaf switch of each port the port rules can report on: those of the fetched IB rows."""
    ports = sorted({(pt.node, pt.device, pt.port) for pt in [*data.ib, *data.ib_errors]})
    return rule_inputs.leaf_switches(ports)


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
    for family in (Family.GPU, Family.IB):
        present = sorted(data.node_sample_times(family))
        end = data.as_of_family(family)
        dataset = "gpu_times" if family == Family.GPU else "throughput"
        bounds = [end - forget, end - need.get(dataset, 0.0)]
        for node, ts in rule_inputs.last_seen(family, bounds, end - forget, present).items():
            seen[(family.value, node)] = ts
    return seen
