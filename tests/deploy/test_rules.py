"""The PrometheusRule: valid for promtool, every alert unit-tested, only metrics the app exports.

The rules are extracted from the rendered PrometheusRule (spec.groups is a Prometheus rule
file) and checked with the real ``promtool``: ``check rules`` on the file as deployed,
``test rules`` on tests/deploy/fixtures/clusterwatch-rules.test.yaml, which gives every
alert a short series that fires it and a healthy one that must not. That file compares
labels and summaries; the descriptions (static prose) are left out of the rule file it reads.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from .manifests import Object, one

RULES_TEST = Path(__file__).parent / "fixtures" / "clusterwatch-rules.test.yaml"
ALERTS = {
    "ClusterWatchMetricsDown",
    "ClusterWatchIngestLagging",
    "ClusterWatchIngestFailing",
    "ClusterWatchEvaluationsFailing",
    "ClusterWatchEvaluationsStale",
    "ClusterWatchNotificationsFailing",
    "ClusterWatchNotificationsGivenUp",
    "ClusterWatchNotificationChannelDisabled",
    "ClusterWatchOutboxBacklog",
    "ClusterWatchOutboxStuck",
    "ClusterWatchHeartbeatStale",
    "ClusterWatchHTTPErrors",
}
_METRIC = re.compile(r"\b(clusterwatch_[a-z_]+)\b")


def _promtool() -> str:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not on PATH (Debian/Ubuntu: apt-get install prometheus)")
    return promtool


def _groups(objects: list[Object]) -> list[Object]:
    return one(objects, "PrometheusRule", "clusterwatch")["spec"]["groups"]


def _rules(objects: list[Object]) -> list[Object]:
    return [rule for group in _groups(objects) for rule in group["rules"]]


def _promtool_run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_promtool(), *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_rules_pass_promtool_check(objects: list[Object], tmp_path: Path) -> None:
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump({"groups": _groups(objects)}, sort_keys=False))

    finished = _promtool_run("check", "rules", rules_file)

    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in finished.stdout
    assert {rule["alert"] for rule in _rules(objects)} == ALERTS
    assert all(rule["labels"]["severity"] in {"warning", "critical"} for rule in _rules(objects))


def test_every_alert_fires_on_its_series_in_promtool_test(
    objects: list[Object], tmp_path: Path
) -> None:
    groups = yaml.safe_load(yaml.safe_dump(_groups(objects)))  # a copy
    for rule in (rule for group in groups for rule in group["rules"]):
        del rule["annotations"]["description"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    shutil.copy(RULES_TEST, tmp_path / RULES_TEST.name)
    cases = yaml.safe_load(RULES_TEST.read_text())["tests"]
    firing = {
        check["alertname"]
        for case in cases
        for check in case["alert_rule_test"]
        if check["exp_alerts"]
    }

    finished = _promtool_run("test", "rules", tmp_path / RULES_TEST.name)

    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert firing == ALERTS


@pytest.mark.django_db
def test_rules_name_only_metrics_clusterwatch_exports(
    objects: list[Object], client: Client
) -> None:
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    exported = set()
    for family in text_string_to_metric_families(response.content.decode()):
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
        exported |= {family.name + suffix for suffix in suffixes.get(family.type, [""])}
    named = {name for rule in _rules(objects) for name in _METRIC.findall(rule["expr"])}

    assert response.status_code == 200
    assert named <= exported, sorted(named - exported)
    assert named == {
        "clusterwatch_ingest_lag_seconds",
        "clusterwatch_ingest_errors_total",
        "clusterwatch_celery_task_outcomes_total",
        "clusterwatch_alerts_last_evaluation_timestamp_seconds",
        "clusterwatch_notification_failures_total",
        "clusterwatch_notification_given_up_total",
        "clusterwatch_notification_channels_disabled",
        "clusterwatch_notification_outbox_backlog",
        "clusterwatch_notification_outbox_oldest_seconds",
        "clusterwatch_worker_heartbeat_timestamp_seconds",
        "clusterwatch_http_requests_total",
    }


def test_metrics_down_rule_matches_the_service_monitors_job(objects: list[Object]) -> None:
    [down] = [rule for rule in _rules(objects) if rule["alert"] == "ClusterWatchMetricsDown"]
    monitor = one(objects, "ServiceMonitor", "clusterwatch")["spec"]
    # Without spec.jobLabel the operator names the job after the Service.
    service = one(objects, "Service", "clusterwatch-web")["metadata"]["name"]

    assert "jobLabel" not in monitor
    assert down["expr"] == f'absent(up{{job="{service}"}} == 1)'
