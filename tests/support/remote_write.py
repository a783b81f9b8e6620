"""Samples into a Prometheus' head by remote write (``--web.enable-remote-write-receiver``).

A live Prometheus serves a steady-state cycle's window from its head (labels, postings and
the open chunks in memory, the WAL replayed after a restart), not from backfilled blocks:
``bench_reads --head`` and tests/conformance/test_read_paths.py write their history there.
An OpenMetrics file (as for promtool) is parsed and sent series by series in time order to
``/api/v1/write``; a value of ``STALE_NAN`` is a staleness marker, as a live scrape writes.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import cramjam
import requests

from ingest.remote_read import PROMPB
from ingest.xor_chunks import STALE_NAN_BITS

#: Prometheus' staleness marker (value.StaleNaN).
STALE_NAN: float = struct.unpack("d", struct.pack("Q", STALE_NAN_BITS))[0]
SeriesKey = tuple[tuple[str, str], ...]

_LINE = re.compile(r"([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+) (\S+)$")
_LABEL = re.compile(r'([A-Za-z_]\w*)="((?:[^"\\]|\\.)*)"')
WRITE_HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}


def series_of(openmetrics: Path) -> dict[SeriesKey, list[tuple[int, float]]]:
    """Each series' labels (``__name__`` first) and its (ms, value) samples, in file order."""
    found: dict[SeriesKey, list[tuple[int, float]]] = {}
    with openmetrics.open() as lines:
        for line in lines:
            match = _LINE.match(line.rstrip("\n"))
            if match is None:
                continue
            name, labels, value, ts = match.groups()
            key = (("__name__", name), *_LABEL.findall(labels or ""))
            found.setdefault(key, []).append((round(float(ts) * 1000), float(value)))
    return found


def write_requests(
    series: Mapping[SeriesKey, list[tuple[int, float]]], per_request: int = 5000
) -> Iterator[bytes]:
    """Snappy-compressed ``WriteRequest`` bodies of ``per_request`` series each."""
    body: list[bytes] = []
    for labels, samples in series.items():
        message = PROMPB["TimeSeries"]()
        for name, label_value in sorted(labels):
            message.labels.add(name=name, value=label_value)
        for ms, value in sorted(samples):
            message.samples.add(timestamp=ms, value=value)
        encoded = message.SerializeToString()
        body.append(b"\x0a" + _uvarint(len(encoded)) + encoded)  # WriteRequest.timeseries = 1
        if len(body) == per_request:
            yield bytes(cramjam.snappy.compress_raw(b"".join(body)))
            body = []
    if body:
        yield bytes(cramjam.snappy.compress_raw(b"".join(body)))


def remote_write(url: str, series: Mapping[SeriesKey, list[tuple[int, float]]]) -> int:
    """Send every series to ``url``'s remote-write receiver; returns the requests sent."""
    return post_bodies(url, write_requests(series))


def post_bodies(url: str, bodies: Iterable[bytes], headers: Mapping[str, str] | None = None) -> int:
    """POST ``WriteRequest`` bodies to ``url``'s receiver one after the other; the count sent."""
    sent = 0
    with requests.Session() as session:
        for body in bodies:
            response = session.post(
                f"{url}/api/v1/write",
                data=body,
                headers={**WRITE_HEADERS, **(headers or {})},
                timeout=300,
            )
            response.raise_for_status()
            sent += 1
    return sent


def receiver_prometheus(  # noqa: ANN201 - PrometheusProcess
    directory: Path, config_tail: str = "", timeout: float = 300, port: int | None = None
):
    """A started Prometheus in ``directory`` with the remote-write receiver and no scrapes;
    ``config_tail`` is appended to its prometheus.yml (e.g. a ``remote_write`` block)."""
    from tests.support.prometheus import PrometheusProcess, free_port

    tsdb = directory / "head-tsdb"
    tsdb.mkdir(parents=True)
    config = directory / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 30s\nscrape_configs: []\n" + config_tail)
    process = PrometheusProcess(
        config, tsdb, port=port or free_port(), extra_args=("--web.enable-remote-write-receiver",)
    )
    return process.start(timeout=timeout)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def head_prometheus(nodes: int, minutes: int, workdir: Path, say) -> tuple[object, float]:  # noqa: ANN001
    """(Prometheus with ``minutes`` of the simulator's history in its head, history end)."""
    import shutil
    import time
    from datetime import UTC, datetime

    from bench.bench_ingest import HISTORY_FAMILIES
    from bench.bench_scale import STEP
    from simulator import Cluster, ClusterSpec, ExporterOptions, write_history

    shutil.rmtree(workdir / "head-tsdb", ignore_errors=True)
    end = float(int(time.time() // STEP) * STEP)
    exporters = ExporterOptions(node_ib_dual_port_hca=False)  # as bench_scale's history
    epoch = datetime.fromtimestamp(end, UTC)
    cluster = Cluster(ClusterSpec(nodes=nodes, seed=1, epoch=epoch, exporters=exporters))
    history = workdir / "head.om"
    began = time.perf_counter()
    stats = write_history(cluster, end - minutes * 60, end, float(STEP), history, HISTORY_FAMILIES)
    say(f"set-up: history {stats.samples:,} samples in {time.perf_counter() - began:.0f} s")
    prometheus = receiver_prometheus(workdir)
    began = time.perf_counter()
    sent = remote_write(prometheus.url, series_of(history))
    history.unlink()
    say(
        f"set-up: remote write into the head, {sent} requests in {time.perf_counter() - began:.0f} s"
    )
    return prometheus, end
