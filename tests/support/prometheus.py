"""A real Prometheus for integration tests: config, promtool backfill, process, PromQL.

Typical use (see `simulated_prometheus`):

    with simulated_prometheus(cluster, tmp_path, history=timedelta(hours=2)) as prom:
        prom.query(f'DCGM_FI_DEV_GPU_UTIL{{Hostname="{prom.hostname("gpu-003")}",gpu="3"}}', prom.end)
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from simulator import (
    Cluster,
    SimulatorServer,
    prometheus_config,
    renderer_for,
    serving,
    write_file_sd,
    write_history,
)

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def have_prometheus() -> bool:
    """True when both binaries are installed."""
    return Path(PROMETHEUS).exists() and Path(PROMTOOL).exists()


def require_prometheus() -> None:
    """Fail, never skip, when the binaries are missing: ``make test`` installs them."""
    if not have_prometheus():
        pytest.fail(
            f"{PROMETHEUS} and {PROMTOOL} are needed: run `make test` (it installs the Debian "
            "package `prometheus`)",
            pytrace=False,
        )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_config(directory: Path, file_sd_path: Path, scrape_interval: str = "2s") -> Path:
    """Write prometheus.yml scraping the file_sd targets; returns its path."""
    path = directory / "prometheus.yml"
    path.write_text(prometheus_config(file_sd_path.resolve(), scrape_interval))
    return path


def create_blocks(openmetrics: Path, tsdb: Path) -> None:
    """Backfill an OpenMetrics file into TSDB blocks (promtool tsdb create-blocks-from openmetrics)."""
    tsdb.mkdir(parents=True, exist_ok=True)
    cmd = [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(tsdb)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"promtool failed: {result.stderr[-2000:]}")


def stop_process(process: subprocess.Popen[bytes] | None) -> None:
    """Terminate a process we started (by its PID), killing it if it will not stop."""
    if process and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


class PrometheusError(RuntimeError):
    """Prometheus answered with an error status."""


@dataclass
class PrometheusProcess:
    """A Prometheus subprocess on 127.0.0.1:port (stopped by PID, never by name)."""

    config: Path
    tsdb: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    # Counted back from the newest sample (live scrapes are at wall time): a history pinned at a
    # fixed epoch needs more than the default 15d, or Prometheus drops it as the calendar moves on.
    retention: str = "15d"
    #: More command-line flags (e.g. ``--web.enable-remote-write-receiver``).
    extra_args: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        """Base URL of the HTTP API."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> PrometheusProcess:
        """Start Prometheus and wait until /-/ready answers."""
        self.log = self.tsdb.parent / "prometheus.log"
        args = [
            PROMETHEUS,
            f"--config.file={self.config}",
            f"--storage.tsdb.path={self.tsdb}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            f"--storage.tsdb.retention.time={self.retention}",
            "--web.enable-admin-api",
            *self.extra_args,
        ]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        """Poll /-/ready until it answers 200 (raises with the log tail otherwise)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process and self.process.poll() is not None:
                break
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return
            time.sleep(0.2)
        tail = self.log.read_text()[-3000:] if self.log and self.log.exists() else ""
        self.stop()
        raise RuntimeError(f"Prometheus did not become ready:\n{tail}")

    def stop(self) -> None:
        """Terminate our Prometheus (by its PID) and wait for it."""
        stop_process(self.process)
        self.process = None

    def api(self, path: str, **params: Any) -> Any:
        """GET /api/v1/<path> and return `data` (raises PrometheusError on error status)."""
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        try:
            with urllib.request.urlopen(
                f"{self.url}/api/v1/{path}?{query}", timeout=60
            ) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            raise PrometheusError(exc.read().decode()[:2000]) from exc
        if body.get("status") != "success":
            raise PrometheusError(str(body))
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """Instant query: a list of {"metric": {...}, "value": [t, "v"]}."""
        return self.api("query", query=expr, time=at)["result"]

    def scalar(self, expr: str, at: float | None = None) -> float | None:
        """The single value of an instant query (None when it returns nothing)."""
        result = self.query(expr, at)
        if not result:
            return None
        if len(result) > 1:
            raise AssertionError(f"{expr} returned {len(result)} series, expected one")
        return float(result[0]["value"][1])

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """Range query: a list of {"metric": {...}, "values": [[t, "v"], ...]}."""
        return self.api("query_range", query=expr, start=start, end=end, step=step)["result"]

    def wait_for(self, expr: str, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Poll an instant query until it returns something."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = self.query(expr)
            if result:
                return result
            time.sleep(0.5)
        raise AssertionError(f"{expr} returned nothing within {timeout} s")


@dataclass
class SimulatedPrometheus:
    """A running Prometheus with simulator history backfilled and the live simulator scraped."""

    prometheus: PrometheusProcess
    server: SimulatorServer
    cluster: Cluster
    start: float
    end: float
    step: float

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """Instant PromQL query."""
        return self.prometheus.query(expr, at)

    def scalar(self, expr: str, at: float | None = None) -> float | None:
        """Single-value PromQL query."""
        return self.prometheus.scalar(expr, at)

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """Range PromQL query."""
        return self.prometheus.query_range(expr, start, end, step)

    def instance(self, node: str, dialect: str) -> str:
        """The ``instance`` of ``node``'s exporter of ``dialect`` (on Kubernetes an IP:port)."""
        return next(
            t.instance
            for t in renderer_for(self.cluster).targets
            if t.node == node and t.dialect == dialect
        )

    def hostname(self, node: str) -> str:
        """dcgm-exporter's ``Hostname`` on ``node`` (its pod's name unless NODE_NAME is set)."""
        return renderer_for(self.cluster).dcgm_hostnames.get(node, node)


@contextlib.contextmanager
def simulated_prometheus(
    cluster: Cluster,
    workdir: Path,
    history: timedelta = timedelta(hours=2),
    step: float = 30.0,
    scrape_interval: str | None = "2s",
    families: str = "key",
    end: float | None = None,
    retention: str = "15d",
) -> Iterator[SimulatedPrometheus]:
    """History [end - history, end) backfilled via promtool, then live scrapes from `end` on.

    `end` defaults to now; give the cluster's spec an epoch near it so faults land in the window.
    Waits until every target has been scraped once (node_down targets report up == 0).
    ``scrape_interval=None``: history only, nothing is scraped (a history pinned in the past has
    no use for live samples, and waiting for a 30 s job's first scrape cost up to 30 s per fixture).
    """
    end = time.time() if end is None else end
    start = end - history.total_seconds()
    workdir.mkdir(parents=True, exist_ok=True)
    om = workdir / "history.om"
    write_history(cluster, start, end, step, om, families)
    create_blocks(om, workdir / "tsdb")
    om.unlink()
    live = scrape_interval is not None
    with serving(cluster) as server:
        targets = renderer_for(cluster).targets if live else []
        sd = write_file_sd(targets, server.address, workdir / "targets.json")
        config = write_config(workdir, sd, scrape_interval or "30s")
        prometheus = PrometheusProcess(config, workdir / "tsdb", retention=retention)
        prometheus.start()
        try:
            if live:
                _wait_scraped(prometheus, len(targets), end)
            yield SimulatedPrometheus(prometheus, server, cluster, start, end, step)
        finally:
            prometheus.stop()


def _wait_scraped(
    prometheus: PrometheusProcess, targets: int, end: float, timeout: float = 60.0
) -> None:
    # History carries `up` too, so count only samples newer than the history's end.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = prometheus.query(f"count(timestamp(up) > {end})")
        if result and int(float(result[0]["value"][1])) >= targets:
            return
        time.sleep(0.5)
    raise AssertionError("Prometheus did not scrape every simulator target in time")
