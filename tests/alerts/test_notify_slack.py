"""Slack messages within Block Kit's limits, validated by slack_sdk's models."""

from __future__ import annotations

import pytest

from alerts.transports.payloads import ZERO_TIME, AlertPayload, WebhookMessage
from alerts.transports.slack import MAX_HEADER_CHARS, clip, render
from tests.alerts.notify_helpers import flush_at, make_alert, make_channel, send_all
from tests.alerts.validators import (
    valid_slack,
    valid_webhook,
    validated_payloads,  # noqa: F401 - the fixture
)
from tests.support.receivers import start_receiver

pytestmark = pytest.mark.usefixtures("validated_payloads")

HOSTILE = "<!channel> <https://x|y> & "
LONG = (HOSTILE * 20)[:400]  # a 400-character label value full of mrkdwn and entities


def alert(i: int, status: str = "firing", **labels: str) -> AlertPayload:
    node = f"gpu-{i:03d}"
    return AlertPayload(
        status=status,  # type: ignore[typeddict-item]
        labels={"alertname": "ib_port_errors", "severity": "critical", "node": node, **labels},
        annotations={
            "summary": f"{HOSTILE}{LONG}",
            "value": "130",
            "node_url": f"http://cw.example/nodes/{node}/",
            "run": LONG,
            "run_url": "http://cw.example/runs/a/b/",
        },
        startsAt="2026-05-01T10:00:00Z",
        endsAt=ZERO_TIME if status == "firing" else "2026-05-01T10:30:00Z",
        generatorURL="http://cw.example/alerts/1",
        fingerprint=f"fp-{i}",
    )


def message(
    alerts: list[AlertPayload], group: dict[str, str], truncated: int = 0
) -> WebhookMessage:
    return WebhookMessage(
        receiver="ops",
        status="firing" if any(a["status"] == "firing" for a in alerts) else "resolved",
        alerts=alerts,
        groupLabels=group,
        commonLabels={"alertname": "ib_port_errors", "severity": "critical", **group},
        commonAnnotations={},
        externalURL="http://cw.example",
        version="4",
        groupKey="{}:{}",
        truncatedAlerts=truncated,
    )


def test_sixty_alerts_with_400_character_hostile_labels_fit_block_kit() -> None:
    names = ["pool", "leaf_switch", "pod", "job", "queue", "run_id"]
    group = {"alertname": "ib_port_errors", **dict.fromkeys(names, LONG)}
    alerts = [alert(i, **dict.fromkeys(names, LONG), device=LONG) for i in range(60)]
    body = render(message(alerts, group))
    blocks = valid_slack(body)
    assert [b.type for b in blocks] == [
        "header",
        "section",
        "section",
        *["section"] * 10,
        "context",
    ]
    header = body["blocks"][0]["text"]["text"]
    assert len(header) == MAX_HEADER_CHARS and header.startswith("[FIRING:60] ib_port_errors ")
    summary = body["blocks"][1]["text"]["text"]
    assert len(summary) == 3000 and summary.endswith("…")  # 4,000+ before clipping
    mrkdwn = str([body["text"], body["blocks"][1:]])  # the header is plain_text: not parsed
    assert "<!channel>" not in mrkdwn and "<https://x|y>" not in mrkdwn
    footer = body["blocks"][-1]["elements"][0]["text"]
    assert footer == "… and 50 more alerts not shown · <http://cw.example|ClusterWatch>"


def test_clip_never_cuts_an_entity_or_a_link() -> None:
    assert clip("a" * 7 + "&amp;b", 10) == "a" * 7 + "…"
    assert clip("a" * 5 + "&amp;" + "b" * 5, 10) == "a" * 5 + "…"
    assert clip("a" * 4 + "&amp;" + "b" * 5, 10) == "a" * 4 + "&amp;…"
    assert clip("ab <http://cw.example/nodes/x/|x> c", 20) == "ab …"
    assert clip("short", 10) == "short"
    assert len(clip("x" * 5000, 3000)) == 3000


@pytest.mark.parametrize(
    ("statuses", "truncated", "title"),
    [
        (["firing"] * 5 + ["resolved"] * 3, 0, "[FIRING:5]"),
        (["firing"] * 5 + ["resolved"] * 3, 4, "[FIRING:5]"),  # cut ones come after resolved
        (["firing"] * 5, 3, "[FIRING:8]"),
        (["resolved"] * 2, 1, "[RESOLVED:3]"),
    ],
)
def test_the_title_counts_only_firing_alerts(
    statuses: list[str], truncated: int, title: str
) -> None:
    alerts = [alert(i, status) for i, status in enumerate(statuses)]
    body = render(message(alerts, {"alertname": "ib_port_errors"}, truncated))
    valid_slack(body)
    assert body["text"].startswith(title + " ib_port_errors")


@pytest.mark.django_db
def test_a_slack_channel_gets_every_alert_counted_even_past_the_webhook_cut(
    settings: pytest.FixtureRequest,
) -> None:
    settings.ALERTS_NOTIFY_MAX_ALERTS = 5  # type: ignore[attr-defined]
    settings.EXTERNAL_URL = "http://cw.example"  # type: ignore[attr-defined]
    for i in range(60):
        make_alert(f"gpu-{i:03d}", leaf_switch="leaf-07", pod=HOSTILE + LONG)
    with start_receiver() as receiver:
        make_channel("slack", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
    (request,) = receiver.requests
    body = request.json()
    valid_slack(body)
    assert body["text"] == "[FIRING:60] ib_port_errors leaf_switch=leaf-07 (critical)"
    assert body["blocks"][2]["text"]["text"].startswith("*Nodes (60):* ")
    footer = body["blocks"][-1]["elements"][0]["text"]
    assert footer == "… and 50 more alerts not shown · <http://cw.example|ClusterWatch>"


def test_the_validators_refuse_what_slack_and_alertmanager_would() -> None:
    from slack_sdk.errors import SlackObjectFormationError

    too_long = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}
    with pytest.raises(SlackObjectFormationError):
        valid_slack({"text": "t", "blocks": [too_long]})
    with pytest.raises(ValueError):
        valid_webhook({"version": "4", "alerts": []})
