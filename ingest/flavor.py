"""Which query API a Prometheus-compatible backend speaks, and what VictoriaMetrics needs.

``ingest.prometheus`` asks ``flavor_of`` once per backend URL (``PROMETHEUS_FLAVOR=auto``)
and, for VictoriaMetrics, sends ``VICTORIAMETRICS_QUERY_ARGS`` with every query and warns
when its lookback is shorter than Prometheus'. docs/scaling.md "VictoriaMetrics" has the
differences and their sources (VictoriaMetrics tag v1.79.5). ``read_path_for`` picks how
``PrometheusClient.read_raw`` reads raw samples (docs/scaling.md "Reading raw samples").
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)
PROMETHEUS, VICTORIAMETRICS = "prometheus", "victoriametrics"
#: VictoriaMetrics-only query args: no response cache, hence no rounding of start/end
#: to the step and no latency offset on instant queries (VictoriaMetrics v1.79.5,
#: app/vmselect/prometheus/prometheus.go). Prometheus ignores form fields it does not know.
VICTORIAMETRICS_QUERY_ARGS = {"nocache": "1"}
#: Label names over all time, as Prometheus answers: newer VictoriaMetrics read a missing
#: (or 0) ``start`` of the labels API as "the last 5 minutes".
VICTORIAMETRICS_LABELS_START = "1"
#: Detected flavour per backend URL (asked once per process).
_FLAVORS: dict[str, str] = {}
#: ``PROMETHEUS_READ_PATH`` values: how ``read_raw`` reads raw samples.
REMOTE_READ, RANGE_SELECTOR = "remote_read", "range_selector"
#: Backend URLs whose remote read answered 404/405/501 (Thanos Query, a proxy that does not
#: route it) or sent chunks we cannot decode: range selectors for the rest of the process.
_NO_REMOTE_READ: set[str] = set()


def read_path_for(flavor: str, url: str) -> str:
    """``PROMETHEUS_READ_PATH=auto``: remote read for Prometheus' API (Prometheus, Mimir;
    Thanos Query answers 404 once), range selectors for VictoriaMetrics (no remote read)."""
    if flavor == VICTORIAMETRICS or url in _NO_REMOTE_READ:
        return RANGE_SELECTOR
    return REMOTE_READ


def refuse_remote_read(url: str) -> None:
    """Read ``url`` through range selectors from now on (auto only)."""
    _NO_REMOTE_READ.add(url)


def flavor_of(buildinfo: object) -> str:
    """The query API behind a ``/api/v1/status/buildinfo`` ``data``.

    Prometheus, Thanos and Mimir name their ``revision``; VictoriaMetrics answers
    ``{}`` (v1.79) or only a fixed ``{"version": "2.24.0"}`` (later versions).
    """
    if isinstance(buildinfo, dict) and not buildinfo.get("revision"):
        return VICTORIAMETRICS
    return PROMETHEUS


#: Prometheus' lookback: VictoriaMetrics needs -search.minStalenessInterval at least this
#: (5m1s: docs/scaling.md "VictoriaMetrics") to carry a vanished series as long.
PROMETHEUS_LOOKBACK_SECONDS = 300.0
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def min_staleness_seconds(flags: str) -> float:
    """``-search.minStalenessInterval`` in VictoriaMetrics' ``/flags`` text (0: not set).

    /flags lists only the flags set, one ``-name="value"`` a line (lib/flagutil/flag.go).
    """
    match = re.search(r'^-search\.minStalenessInterval="([^"]*)"', flags, re.MULTILINE)
    if not match:
        return 0.0
    return sum(float(n) * _GO_UNITS[unit] for n, unit in _GO_DURATION.findall(match.group(1)))


def warn_if_short_lookback(url: str, flags: str) -> None:
    """Log a warning when VictoriaMetrics' ``/flags`` show a lookback under Prometheus'."""
    seconds = min_staleness_seconds(flags)
    if seconds < PROMETHEUS_LOOKBACK_SECONDS:
        log.warning(
            "%s is VictoriaMetrics with -search.minStalenessInterval=%gs: a series that "
            "vanishes ends sooner than in Prometheus (5 min); run it with "
            "-search.minStalenessInterval=5m1s (docs/scaling.md)",
            url,
            seconds,
        )
