"""Credentials never shown: PROMETHEUS_URL's password, Slack webhook URLs, channel secrets."""

from __future__ import annotations

import pytest
from django.test import Client
from django.test.utils import override_settings

from alerts.models import NotificationChannel
from core.secrets import has_credentials, mask, redact_text, redact_url
from ingest import services
from ingest.models import FamilyHealth, IngestCycle

PASSWORD = "hunter2-pw-7731"
CREDENTIALED = f"http://bob:{PASSWORD}@127.0.0.1:1"
SLACK = "https://hooks.slack.com/services/T0001/B0002/abcdefghijklmnopqrstWXYZ"
PAGES = ["/", "/fabric/", "/nodes/", "/alerts/", "/runs/", "/queues/", "/coverage/"]
API = ["/api/v1/overview", "/api/v1/coverage", "/api/v1/alerts", "/api/v1/silences",
       "/api/v1/runs", "/api/v1/queues", "/api/v1/openapi.json", "/api/v1/whoami",
       "/readyz", "/healthz"]  # fmt: skip


def test_urls_and_messages_lose_their_credentials() -> None:
    assert redact_url(CREDENTIALED + "/prom") == "http://***@127.0.0.1:1/prom"
    assert redact_url("http://127.0.0.1:9090") == "http://127.0.0.1:9090"
    assert redact_text(f"GET {CREDENTIALED}/-/ready failed; also https://tok@x.io/a") == (
        "GET http://***@127.0.0.1:1/-/ready failed; also https://***@x.io/a"
    )
    assert (has_credentials(CREDENTIALED), has_credentials("http://h:1")) == (True, False)
    assert (mask("short"), mask("a-much-longer-secret-1234")) == ("••••••", "••••••1234")


@pytest.mark.django_db
def test_a_non_staff_scan_with_credentials_in_prometheus_url_finds_no_password(
    logged_in_client: Client,
) -> None:
    with override_settings(PROMETHEUS_URL=CREDENTIALED, COVERAGE_DEADLINE_SECONDS=1.0):
        outcome = services.ingest_family("gpu", publish=False)
        assert outcome.status == "error"
        bodies = {path: logged_in_client.get(path).content.decode() for path in PAGES + API}
    found = sorted(path for path, body in bodies.items() if PASSWORD in body)
    assert found == []
    # The error is shown (so the scan would have found it), with the URL redacted.
    assert "http://***@127.0.0.1:1" in bodies["/api/v1/overview"]
    assert "http://***@127.0.0.1:1" in bodies["/api/v1/coverage"]
    assert PASSWORD not in FamilyHealth.objects.get(family="gpu").last_error
    assert PASSWORD not in IngestCycle.objects.get(family="gpu").error


@pytest.mark.django_db
def test_readyz_never_shows_prometheus_credentials(client: Client) -> None:
    with override_settings(PROMETHEUS_URL=CREDENTIALED):
        body = client.get("/readyz").content.decode()
    assert PASSWORD not in body and '"name": "prometheus"' in body


@pytest.mark.django_db
def test_the_slack_url_is_masked_after_saving_and_kept_when_left_blank(
    client: Client, staff_user: object
) -> None:
    channel = NotificationChannel.objects.create(name="ops-slack", kind="slack", url=SLACK)
    client.force_login(staff_user)
    listing = client.get("/admin/alerts/notificationchannel/").content.decode()
    page = client.get(f"/admin/alerts/notificationchannel/{channel.pk}/change/").content.decode()
    for shown in (listing, page):
        assert "abcdefghijklmnopqrst" not in shown and "T0001" not in shown
        assert "https://hooks.slack.com/…WXYZ" in shown
    form = {"name": "ops-slack", "kind": "slack", "url": "", "secret": "",
            "min_severity": "critical", "matchers": "[]", "group_by": "[]",
            "group_wait": "00:00:30", "group_interval": "00:05:00",
            "repeat_interval": "04:00:00", "enabled": "on"}  # fmt: skip
    saved = client.post(f"/admin/alerts/notificationchannel/{channel.pk}/change/", form)
    assert saved.status_code == 302
    channel.refresh_from_db()
    assert (channel.url, channel.min_severity) == (SLACK, "critical")
