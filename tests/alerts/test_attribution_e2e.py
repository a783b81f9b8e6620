"""Acceptance: an IB port fault on a node of a running job pages the job's team, and says how much.

Simulator (pinned epoch) → real Prometheus → real ingest → rules → notification flush → local
webhook receivers. Nothing is labelled by hand: namespace, run, queue and leaf switch come from
kube-state-metrics and the fabric topology as ingested, the pool from the node's taint, the
team from ``ALERTS_NAMESPACE_TEAMS``. One short history (40 min, 24 nodes, the busy cluster of
tests/conformance/test_scenarios.py with its symbol-error scenario).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone

from alerts.attribution import format_gpu_hours
from alerts.models import Alert, Evaluation, NotificationChannel
from alerts.notify import services as notify
from simulator import Cluster, ClusterSpec
from simulator.scenarios import with_scenario
from tests.alerts.acceptance import empty_ingest_tables, ingest_history, replay
from tests.alerts.notify_helpers import send_all
from tests.support.prometheus import require_prometheus, simulated_prometheus
from tests.support.receivers import start_receiver

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]
EPOCH = datetime(2026, 11, 16, 12, 0, tzinfo=UTC)  # pinned, as the conformance scenarios
NODES, SEED, STEP = 24, 1, 30.0
FAULT_AT = EPOCH - timedelta(minutes=30)  # ib_symbol_errors: 30 minutes, up to the epoch
HISTORY = timedelta(minutes=40)
TEAMS = {"llm-pretrain": "ml-infra", "research": "research-ml"}
SETTINGS = {
    "INGEST_PROMETHEUS_RETENTION_DAYS": 100_000,  # the epoch is pinned, the calendar is not
    "INGEST_RAW_RETENTION_DAYS": 100_000,
    "INGEST_LOCAL_QUEUE_MAP": {"pretrain": "cq-pretrain", "research": "cq-research"},
    "ALERTS_NAMESPACE_TEAMS": TEAMS,
}


@pytest.fixture(scope="module")
def faulty(
    tmp_path_factory: pytest.TempPathFactory,
    django_db_setup: None,
    django_db_blocker,  # noqa: ANN001
) -> Iterator[tuple]:
    """(spec, the run on the faulty node) with the history ingested and replayed every 5 min."""
    require_prometheus()
    spec = with_scenario(ClusterSpec(nodes=NODES, seed=SEED, epoch=EPOCH), "busy_healthy")
    spec = with_scenario(spec, "ib_symbol_errors", FAULT_AT)
    fault = spec.faults[-1]
    cluster = Cluster(spec)
    run = next(r for r in cluster.runs_at(FAULT_AT.timestamp()) if fault.nodes[0] in r.nodes)
    end = EPOCH.timestamp()
    workdir = Path(tmp_path_factory.mktemp("attribution"))
    with simulated_prometheus(cluster, workdir, HISTORY, STEP, None, "key", end, "100y") as prom:
        with django_db_blocker.unblock(), override_settings(**SETTINGS):
            ingest_history(prom)
            try:
                replay(FAULT_AT.timestamp() + 300, end - STEP, 300.0)
                yield spec, fault, run
            finally:
                NotificationChannel.objects.all().delete()
                Alert.objects.all().delete()
                Evaluation.objects.all().delete()
                empty_ingest_tables()


def test_an_ib_port_fault_pages_only_the_team_whose_run_it_hurts(faulty) -> None:  # noqa: ANN001
    spec, fault, run = faulty
    node, device = fault.nodes[0], f"mlx5_{fault.ports[0]}"
    fired = [
        (a.rule, a.node, a.labels.get("device")) for a in Alert.objects.exclude(firing_at=None)
    ]
    assert fired == [("ib_port_errors", node, device)]
    with start_receiver() as ours, start_receiver() as theirs:
        for name, team, url in (
            ("ml-infra", "ml-infra", ours.url),
            ("research", "research-ml", theirs.url),
        ):
            NotificationChannel.objects.create(
                name=name, kind="webhook", url=url, min_severity="warning",
                matchers=[{"name": "team", "op": "=", "value": team}],
            )  # fmt: skip
        now = timezone.now() - timedelta(minutes=1)  # in the past: the rows it writes are due
        notify.flush(now)
        notify.flush(now + timedelta(seconds=31))  # group_wait
        send_all()
    assert (len(ours.requests), len(theirs.requests)) == (1, 0)
    message = ours.requests[0].json()
    assert [a["labels"] for a in message["alerts"]] == [{
        "alertname": "ib_port_errors", "severity": "critical", "node": node, "device": device,
        "port": "1", "leaf_switch": f"ib-leaf-01-rail{fault.ports[0]}", "pool": "training",
        "gpu_model": "NVIDIA H100 80GB HBM3", "namespace": run.queue.namespace, "run": run.name,
        "queue": run.queue.local_queue, "cluster_queue": run.queue.cluster_queue,
        "team": TEAMS[run.queue.namespace],
    }]  # fmt: skip
    alert = Alert.objects.get(rule="ib_port_errors")
    gpus, nodes = spec.gpus_per_node * len(run.nodes), len(run.nodes)
    hours = gpus * (alert.last_match_at - alert.pending_since).total_seconds() / 3600
    text = (
        f"hurts: {run.queue.namespace}/{run.name} ({gpus} GPUs on {nodes} nodes) since "
        f"{alert.pending_since:%H:%M} — {format_gpu_hours(hours)} GPU-hours at stake so far"
    )
    # Pinned epoch, so pinned values: 16 nodes × 8 GPUs from 11:34:30 to 11:55 = 43.7 GPU-hours.
    assert (gpus, nodes, alert.pending_since) == (
        128,
        16,
        datetime(2026, 11, 16, 11, 34, 30, tzinfo=UTC),
    )
    assert text == (
        f"hurts: llm-pretrain/{run.name} (128 GPUs on 16 nodes) since 11:34 — "
        "44 GPU-hours at stake so far"
    )
    assert message["alerts"][0]["annotations"]["hurts"] == text
    assert message["alerts"][0]["annotations"]["run_url"].endswith(
        f"/runs/{run.queue.namespace}/{run.name}/"
    )
    # The fault began at FAULT_AT; symbol errors cross 120/hour within 4.5 minutes of it.
    assert FAULT_AT <= alert.pending_since <= FAULT_AT + timedelta(seconds=270 + STEP)
    # Replayed every 5 min from FAULT_AT + 5 min: the last evaluation judged the data at 11:55.
    assert alert.last_match_at == EPOCH - timedelta(minutes=5)
    faulty_alert_page(alert, text, run)


def faulty_alert_page(alert: Alert, text: str, run) -> None:  # noqa: ANN001
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.create_user("oncall", password="x"))
    page = client.get(f"/alerts/{alert.pk}/").content.decode()
    link = f'<a href="/runs/{run.queue.namespace}/{run.name}/#plot-timeline">{text}</a>'
    assert link in page
    served = client.get(f"/api/v1/alerts?team=ml-infra&namespace={run.queue.namespace}").json()
    assert [a["id"] for a in served["alerts"]] == [alert.pk]
    assert served["alerts"][0]["hurts"][0]["gpu_hours"] == pytest.approx(128 * 1230 / 3600)
