"""Deadlines and size caps on Prometheus: slow-drip, hung, huge and erroring fake servers on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest
from django.test import Client
from django.test.utils import override_settings

from config.celery import queue_of
from ingest import services
from ingest.models import FamilyHealth, IngestCursor, IngestCycle
from ingest.prometheus import PrometheusClient, PrometheusError, PrometheusUnavailable, split_form

Behaviour = Callable[[BaseHTTPRequestHandler, dict[str, str]], None]
T0 = 1_700_000_010
START, END = datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0 + 600, UTC)


@contextmanager
def fake_prometheus(behaviour: Behaviour) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A server on a free 127.0.0.1 port answering every request with ``behaviour``."""
    received: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            received.append({"path": self.path, **form})
            try:
                behaviour(self, form)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up: what these tests want

        do_GET = do_POST = _handle  # noqa: N815 - http.server's API

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def reply(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def slow_drip(handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
    """Headers at once, then one byte every 0.1 s: never trips a per-read timeout."""
    handler.send_response(200)
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    for _ in range(1000):
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.1)


def hung(handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
    """Accepts the request and never answers."""
    time.sleep(30)


def matrix(handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
    """One series, a point per step of the asked window (so the size grows with the window)."""
    start, end, step = int(form["start"]), int(form["end"]), int(form["step"])
    values = [[ts, "1"] for ts in range(start, end + 1, step)]
    result = [{"metric": {"__name__": "up", "node": "gpu-001"}, "values": values}]
    reply(handler, 200, json.dumps({"status": "success", "data": {"result": result}}).encode())


def timed(call: Callable[[], object]) -> tuple[Exception, float]:
    started = time.monotonic()
    with pytest.raises(PrometheusError) as caught:
        call()
    return caught.value, time.monotonic() - started


def test_a_slow_drip_answer_fails_at_the_whole_request_deadline() -> None:
    with fake_prometheus(slow_drip) as (url, _):
        client = PrometheusClient(url, timeout=1.0, deadline=1.5)
        error, elapsed = timed(lambda: client.query("up"))
    assert isinstance(error, PrometheusUnavailable)
    assert "deadline of 1.5 s exceeded" in str(error) and "for query up" in str(error)
    assert 1.5 <= elapsed < 3.0


def test_a_hung_prometheus_fails_at_the_socket_timeout() -> None:
    with fake_prometheus(hung) as (url, _):
        client = PrometheusClient(url, timeout=0.5, deadline=10)
        error, elapsed = timed(lambda: client.query("up"))
    assert isinstance(error, PrometheusUnavailable) and "ReadTimeout" in str(error)
    assert elapsed < 2.0


def test_a_range_answer_over_the_cap_is_split_not_loaded() -> None:
    with fake_prometheus(matrix) as (url, received):
        # 21 points of ~20 bytes each: about 600 bytes whole, under 400 as halves.
        with override_settings(PROMETHEUS_MAX_ANSWER_BYTES=400):
            answer = PrometheusClient(url).query_range("up", START, END, 30)
    windows = [(int(r["start"]) - T0, int(r["end"]) - T0) for r in received]
    assert windows == [(0, 600), (0, 300), (330, 600)]
    points = [ts - T0 for series in answer.series for ts, _ in series.points]
    assert points == list(range(0, 601, 30))
    assert [len(s.points) for s in answer.series] == [11, 10]


def test_a_single_step_over_the_cap_is_refused_with_a_clear_error() -> None:
    with fake_prometheus(matrix) as (url, received):
        with override_settings(PROMETHEUS_MAX_ANSWER_BYTES=1024):
            client = PrometheusClient(url)
        client.max_bytes = 10
        error, _ = timed(lambda: client.query_range("up", START, START, 30))
    assert str(error) == (
        f"{url}: answer too large (125 bytes announced; PROMETHEUS_MAX_ANSWER_BYTES=10) "
        "for query up"
    )
    assert len(received) == 1


def test_split_form_cuts_on_the_step_grid() -> None:
    form = {"query": "up", "start": T0, "end": T0 + 90, "step": "30"}
    assert split_form(form, 30) == [
        {"query": "up", "start": T0, "end": T0 + 30, "step": "30"},
        {"query": "up", "start": T0 + 60, "end": T0 + 90, "step": "30"},
    ]
    assert split_form({**form, "end": T0}, 30) is None


@pytest.mark.parametrize("status", [200, 422])
def test_a_prometheus_error_answer_is_reported_in_its_own_words(status: int) -> None:
    body = {"status": "error", "errorType": "execution",
            "error": "query processing would load too many samples into memory"}  # fmt: skip

    def erroring(handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        reply(handler, status, json.dumps(body).encode())

    with fake_prometheus(erroring) as (url, _):
        error, _ = timed(lambda: PrometheusClient(url).query("up"))
    words = "Prometheus execution: query processing would load too many samples into memory"
    assert words in str(error) and "KeyError" not in str(error)


@pytest.mark.django_db
def test_a_cycle_against_a_dripping_prometheus_fails_in_time_and_is_recorded() -> None:
    cursor_at = services.align_down(services.utcnow() - timedelta(hours=1), 30)
    IngestCursor.objects.create(family="gpu", covered_until=cursor_at)
    with fake_prometheus(slow_drip) as (url, _):
        client = PrometheusClient(url, timeout=1.0, deadline=1.0)
        started = time.monotonic()
        outcome = services.ingest_family(
            "gpu", until=cursor_at + timedelta(minutes=5), client=client, publish=False
        )
        elapsed = time.monotonic() - started
    assert outcome.status == "error" and "deadline of 1 s exceeded" in outcome.error
    assert elapsed < 4.0
    cycle = IngestCycle.objects.get()
    assert cycle.finished_at is not None and "deadline of 1 s exceeded" in cycle.error
    assert FamilyHealth.objects.get(family="gpu").errors == 1
    # Nothing committed: the next cycle starts again from the same cursor.
    assert IngestCursor.objects.get(family="gpu").covered_until == cursor_at


@pytest.mark.django_db
def test_a_cycle_left_unfinished_by_a_killed_worker_is_closed_as_interrupted() -> None:
    now = services.utcnow()
    old = IngestCycle.objects.create(family="gpu", started_at=now - timedelta(seconds=400),
                                     window_start=now, window_end=now)  # fmt: skip
    running = IngestCycle.objects.create(family="gpu", started_at=now - timedelta(seconds=10),
                                         window_start=now, window_end=now)  # fmt: skip
    assert services.close_interrupted("gpu") == 1
    old.refresh_from_db()
    running.refresh_from_db()
    assert (old.error, running.finished_at) == (services.INTERRUPTED, None)


def test_every_queue_has_soft_and_hard_time_limits() -> None:
    from config.celery import app

    app.loader.import_default_modules()
    limits = {
        name: (app.tasks[name].soft_time_limit, app.tasks[name].time_limit)
        for name in ("ingest.tasks.ingest_cycle", "alerts.tasks.evaluate_alerts",
                     "alerts.notify.tasks.flush_notifications", "core.tasks.record_worker_heartbeat")
    }  # fmt: skip
    assert limits == {
        "ingest.tasks.ingest_cycle": (300, 360),
        "alerts.tasks.evaluate_alerts": (120, 150),
        "alerts.notify.tasks.flush_notifications": (60, 90),
        "core.tasks.record_worker_heartbeat": (300, 360),
    }
    routes = {"a.notify.*": {"queue": "notify"}, "a.*": {"queue": "alerts"}}
    assert queue_of("a.notify.x", routes, "celery") == "notify"
    assert queue_of("b.x", routes, "celery") == "celery"


@pytest.mark.django_db
def test_coverage_answers_within_its_budget_naming_the_query(logged_in_client: Client) -> None:
    with fake_prometheus(hung) as (url, _):
        with override_settings(PROMETHEUS_URL=url, COVERAGE_DEADLINE_SECONDS=1.0):
            started = time.monotonic()
            response = logged_in_client.get("/api/v1/coverage")
            elapsed = time.monotonic() - started
    assert response.status_code == 503 and elapsed < 3.0
    body = response.json()
    assert body["error"] == "prometheus_unavailable"
    assert body["detail"].startswith("Prometheus could not be queried: http://127.0.0.1:")
    assert "ReadTimeout" in body["detail"]
