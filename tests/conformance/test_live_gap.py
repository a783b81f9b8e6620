"""Issue 21, acceptance 2: a node whose exporters vanish, with a real Prometheus scraping live.

Bare-metal cluster (no kube-state-metrics) served by the simulator and scraped every 2 s;
ingest steps are 1 s, so most steps lie between two samples and carry their rate. A few
seconds into the live scrape one node's exporters vanish from service discovery (as when a
node is removed). Its stored samples must end at its last real scrape (the steps carried
after it stay within one scrape interval: Prometheus' staleness marker comes with the next
scrape), and ``node_metrics_missing`` must fire at that last sample + ``missing_after_seconds``
(- one step, + one scrape interval) — not after the backend's 5-minute lookback.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import override_settings

from alerts.models import Alert, Evaluation, RuleConfig
from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from simulator import Cluster, ClusterSpec
from simulator.render import renderer_for
from simulator.spec import Dialect, ExporterOptions
from simulator.targets import write_file_sd
from tests.alerts.acceptance import empty_ingest_tables, replay
from tests.support.prometheus import require_prometheus, simulated_prometheus

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]
SCRAPE = 2.0
STEP = 1
MISSING_AFTER = 6
LIVE = 6.0  # seconds of live scraping before the node vanishes
NODE = "gpu-002"


def last_rows() -> dict[str, float]:
    """Per node, the newest stored GPU sample time."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n.name, extract(epoch FROM max(s.ts)) FROM ingest_gpuhot s "
            "JOIN ingest_node n ON n.id = s.node_id GROUP BY n.name"
        )
        return {name: float(ts) for name, ts in cursor.fetchall()}


def test_a_vanished_node_ends_at_its_last_scrape_and_is_missing_after_missing_after(
    tmp_path: Path,
) -> None:
    require_prometheus()
    now = time.time()
    spec = ClusterSpec(
        nodes=3,
        seed=1,
        epoch=datetime.fromtimestamp(now // 3600 * 3600, UTC),
        exporters=ExporterOptions(dialects=frozenset({Dialect.DCGM, Dialect.NODE_IB})),
    )
    cluster = Cluster(spec)
    settings = {"INGEST_STEP_SECONDS": STEP, "INGEST_SETTLE_SECONDS": 0}
    RuleConfig.objects.update_or_create(rule="node_metrics_missing", defaults={
        "params": {"missing_after_seconds": MISSING_AFTER, "families": ["gpu", "ib"],
                   "forget_after_seconds": 86400},
        "for_seconds": 0, "severity": "critical"})  # fmt: skip
    with (
        simulated_prometheus(
            cluster, tmp_path, timedelta(minutes=1), SCRAPE, "2s", end=now
        ) as prom,
        override_settings(**settings),
    ):
        live = int(time.time()) + 1  # every target scraped live once: store from here on
        time.sleep(LIVE)
        removed_at = time.time()
        kept = [t for t in renderer_for(cluster).targets if t.node != NODE]
        write_file_sd(kept, prom.server.address, tmp_path / "targets.json")
        time.sleep(MISSING_AFTER + 10)
        end = int(time.time()) - 1
        client = PrometheusClient(prom.prometheus.url)
        ingest_all(since=datetime.fromtimestamp(live, UTC),
                   until=datetime.fromtimestamp(end, UTC), client=client)  # fmt: skip
        samples = prom.query(f'DCGM_FI_DEV_GPU_UTIL{{Hostname="{NODE}", gpu="0"}}[60s]', end)
        last_scrape = max(float(ts) for ts, _value in samples[0]["values"])
        rows = last_rows()
        try:
            result = replay(live + 2, end, STEP)
        finally:
            Alert.objects.all().delete()
            Evaluation.objects.all().delete()
            empty_ingest_tables()
    assert removed_at - SCRAPE <= last_scrape < removed_at + 6  # service discovery's reload
    assert last_scrape <= rows[NODE] + STEP and rows[NODE] < last_scrape + SCRAPE
    assert {n: ts >= end - SCRAPE - 1 for n, ts in rows.items() if n != NODE} == {
        "gpu-001": True,
        "gpu-003": True,
    }
    missing = [s for s in result.seen.values() if s.alert.rule == "node_metrics_missing"]
    assert [s.alert.labels["node"] for s in missing if s.first_firing] == [NODE]
    fired_at = missing[0].first_firing
    assert last_scrape + MISSING_AFTER - STEP <= fired_at <= last_scrape + MISSING_AFTER + SCRAPE
    assert {s.alert.rule for s in result.seen.values() if s.first_firing} == {
        "node_metrics_missing"
    }
