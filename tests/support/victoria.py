"""A real single-node VictoriaMetrics for integration tests: process, history import, flush.

The Debian package ``victoria-metrics`` (1.79.5) installs /usr/bin/victoria-metrics and
may start a system service on :8428; tests never use it: each starts its own process on
a free port of 127.0.0.1 with its own ``-storageDataPath`` and stops it by PID.

Typical use::

    with VictoriaMetricsProcess(tmp_path / "vm").running() as vm:
        vm.import_openmetrics(history_path)   # simulator.write_history's file
        vm.flush()                            # /internal/force_flush: searchable now

Flags (checked against ``victoria-metrics -help`` of 1.79.5 and its source, tag v1.79.5,
app/vmselect/prometheus/prometheus.go and app/vmselect/promql/rollup.go):

- ``-retentionPeriod=100y``: the tests' history lies at a pinned past epoch.
- ``-search.latencyOffset=0s``: no hiding of the newest points (VM clamps it to 1 s).
- the response cache stays on, as deployed: ingest's ``nocache=1`` is what turns it off.
- ``-search.minStalenessInterval=5m1s``: Prometheus' 5-minute lookback, see
  ``PROMETHEUS_COMPATIBLE_LOOKBACK`` and docs/scaling.md "VictoriaMetrics".
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.prometheus import free_port, stop_process

VICTORIA_METRICS = shutil.which("victoria-metrics") or "/usr/bin/victoria-metrics"
#: VictoriaMetrics' window for a bare selector is (t - w, t]; Prometheus 2.x's lookback is
#: [t - 5m, t]. With samples and steps on whole seconds, (t - 5m1s, t] selects the same samples.
PROMETHEUS_COMPATIBLE_LOOKBACK = "5m1s"
#: Lines per import request (a few MB of exposition text).
IMPORT_BATCH_LINES = 50_000


def require_victoria_metrics() -> None:
    """Fail, never skip, when the binary is missing: ``make test`` installs it."""
    if not Path(VICTORIA_METRICS).exists():
        pytest.fail(
            f"{VICTORIA_METRICS} is needed: run `scripts/ensure_services.sh --test` (it installs "
            "the Debian package `victoria-metrics`)",
            pytrace=False,
        )


def openmetrics_to_prometheus_ms(lines: Iterator[str]) -> Iterator[str]:
    """simulator.write_history's OpenMetrics (second timestamps) as Prometheus text (ms).

    Each sample line ends with `` <unix seconds>``; label values may hold spaces, so
    only the last token is the timestamp. Comments (``# EOF``) are dropped.
    """
    for line in lines:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        sample, _, stamp = line.rpartition(" ")
        yield f"{sample} {round(float(stamp) * 1000)}\n"


@dataclass
class VictoriaMetricsProcess:
    """A victoria-metrics subprocess on 127.0.0.1:port (stopped by PID, never by name)."""

    workdir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL of its HTTP API (Prometheus-compatible query API under /api/v1)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.workdir / "victoria-metrics.log"

    def args(self) -> list[str]:
        """The command line (see the module docstring for why each flag)."""
        return [
            VICTORIA_METRICS,
            f"-storageDataPath={self.workdir / 'data'}",
            f"-httpListenAddr=127.0.0.1:{self.port}",
            "-retentionPeriod=100y",
            "-search.latencyOffset=0s",
            f"-search.minStalenessInterval={PROMETHEUS_COMPATIBLE_LOOKBACK}",
            "-loggerLevel=WARN",
        ]

    def start(self, timeout: float = 30.0) -> VictoriaMetricsProcess:
        """Start it and wait until /health answers."""
        require_victoria_metrics()
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(self.args(), stdout=log, stderr=subprocess.STDOUT)
        self._wait_ready(timeout)
        return self

    @contextlib.contextmanager
    def running(self) -> Iterator[VictoriaMetricsProcess]:
        """Started on entry, stopped by PID on exit."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process and self.process.poll() is not None:
                break
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            time.sleep(0.2)
        tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
        self.stop()
        raise RuntimeError(f"VictoriaMetrics did not become ready:\n{tail}")

    def stop(self) -> None:
        """Terminate our process (by its PID) and wait for it."""
        stop_process(self.process)
        self.process = None

    def _post(self, path: str, body: bytes = b"") -> None:
        request = urllib.request.Request(f"{self.url}{path}", data=body, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{path}: HTTP {exc.code}: {exc.read().decode()[:2000]}") from exc

    def import_openmetrics(self, path: Path) -> int:
        """POST a write_history file to /api/v1/import/prometheus; returns the lines sent."""
        sent, batch = 0, []
        with path.open(encoding="utf-8") as source:
            for line in openmetrics_to_prometheus_ms(source):
                batch.append(line)
                if len(batch) >= IMPORT_BATCH_LINES:
                    self._post("/api/v1/import/prometheus", "".join(batch).encode())
                    sent, batch = sent + len(batch), []
        if batch:
            self._post("/api/v1/import/prometheus", "".join(batch).encode())
            sent += len(batch)
        return sent

    def flush(self) -> None:
        """/internal/force_flush: what was imported is searchable from now on."""
        self._post("/internal/force_flush")
