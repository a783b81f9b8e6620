"""Transports against local receiver servers: bodies, headers, and error mapping."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from alerts.transports import ChannelTarget, TransportError, transport_for
from alerts.transports.base import parse_retry_after
from alerts.transports.payloads import ZERO_TIME, AlertPayload, WebhookMessage
from alerts.transports.slack import render
from tests.alerts.validators import validated_payloads  # noqa: F401 - the fixture
from tests.support.receivers import (
    GONE,
    SERVER_ERROR,
    Reply,
    rate_limited,
    self_signed_certificate,
    slow,
    start_receiver,
)

pytestmark = pytest.mark.usefixtures("validated_payloads")


def alert(node: str, status: str = "firing", **labels: str) -> AlertPayload:
    return AlertPayload(
        status=status,  # type: ignore[typeddict-item]
        labels={"alertname": "ib_port_errors", "severity": "critical", "node": node, **labels},
        annotations={
            "summary": f"symbol errors on {node}",
            "value": "130",
            "node_url": f"http://cw.example/nodes/{node}/",
        },
        startsAt="2026-05-01T10:00:00Z",
        endsAt=ZERO_TIME if status == "firing" else "2026-05-01T10:30:00Z",
        generatorURL="http://cw.example/alerts/1",
        fingerprint=f"fp-{node}",
    )


def message(*alerts: AlertPayload, truncated: int = 0) -> WebhookMessage:
    return WebhookMessage(
        receiver="ops",
        status="firing" if any(a["status"] == "firing" for a in alerts) else "resolved",
        alerts=list(alerts),
        groupLabels={"alertname": "ib_port_errors", "leaf_switch": "leaf-07"},
        commonLabels={
            "alertname": "ib_port_errors",
            "severity": "critical",
            "leaf_switch": "leaf-07",
        },
        commonAnnotations={},
        externalURL="http://cw.example",
        version="4",
        groupKey='{}:{alertname="ib_port_errors",leaf_switch="leaf-07"}',
        truncatedAlerts=truncated,
    )


def target(kind: str, url: str, secret: str = "") -> ChannelTarget:
    return ChannelTarget(name="ops", kind=kind, url=url, secret=secret)


def test_webhook_sends_the_v4_message_signed_with_the_channel_secret() -> None:
    sent = message(alert("gpu-001", leaf_switch="leaf-07"))
    with start_receiver() as receiver:
        code = transport_for(target("webhook", receiver.url + "/hook", "s3cret")).notify(sent)
    (request,) = receiver.requests
    expected = "sha256=" + hmac.new(b"s3cret", request.body, hashlib.sha256).hexdigest()
    assert code == 200
    assert request.path == "/hook"
    assert request.headers["X-ClusterWatch-Signature"] == expected
    assert request.headers["Content-Type"] == "application/json"
    assert request.json() == sent


def test_webhook_without_a_secret_sends_no_signature() -> None:
    with start_receiver() as receiver:
        transport_for(target("webhook", receiver.url)).notify(message(alert("gpu-001")))
    assert "X-ClusterWatch-Signature" not in receiver.requests[0].headers


def test_alertmanager_gets_a_list_with_end_times_only_on_resolutions() -> None:
    sent = message(alert("gpu-001"), alert("gpu-002", status="resolved"))
    with start_receiver() as receiver:
        transport_for(target("alertmanager", receiver.url + "/")).notify(sent)
    (request,) = receiver.requests
    firing, resolved = request.json()
    assert request.path == "/api/v2/alerts"
    assert firing == {
        "labels": {"alertname": "ib_port_errors", "severity": "critical", "node": "gpu-001"},
        "annotations": sent["alerts"][0]["annotations"],
        "startsAt": "2026-05-01T10:00:00Z",
        "generatorURL": "http://cw.example/alerts/1",
    }
    assert resolved["endsAt"] == "2026-05-01T10:30:00Z"


def test_slack_message_names_the_switch_and_every_node() -> None:
    sent = message(*(alert(f"gpu-00{i}", leaf_switch="leaf-07") for i in range(1, 4)))
    with start_receiver() as receiver:
        transport_for(target("slack", receiver.url)).notify(sent)
    body = receiver.requests[0].json()
    header, facts, nodes, *lines, footer = body["blocks"]
    assert body["text"] == "[FIRING:3] ib_port_errors leaf_switch=leaf-07 (critical)"
    assert header == {"type": "header", "text": {"type": "plain_text", "text": body["text"]}}
    assert facts["text"]["text"] == (
        "*Severity:* critical   *Rule:* ib_port_errors   *Scope:* leaf_switch=leaf-07"
    )
    assert nodes["text"]["text"] == (
        "*Nodes (3):* <http://cw.example/nodes/gpu-001/|gpu-001>, "
        "<http://cw.example/nodes/gpu-002/|gpu-002>, <http://cw.example/nodes/gpu-003/|gpu-003>"
    )
    assert len(lines) == 3
    assert lines[0]["text"]["text"] == (
        ":red_circle: *<http://cw.example/nodes/gpu-001/|gpu-001>* value *130*\nsymbol errors on gpu-001"
    )
    assert footer["elements"][0]["text"] == "<http://cw.example|ClusterWatch>"


def test_slack_escapes_untrusted_label_values() -> None:
    hostile = alert("gpu-<!channel>&", status="firing", port="<@U1>")
    hostile["annotations"]["run"] = "a>b"
    text = json.dumps(render(message(hostile)))
    assert "<!channel>" not in text and "<@U1>" not in text
    assert "gpu-&lt;!channel&gt;&amp;" in text
    assert "`port=&lt;@U1&gt;`" in text
    assert "Run: a&gt;b" in text


def test_slack_truncates_a_very_large_group() -> None:
    alerts = [
        alert(f"gpu-{i:04d}-with-a-rather-long-host-name", leaf_switch="leaf-07")
        for i in range(600)
    ]
    body = render(message(*alerts, truncated=400))
    texts = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]
    assert len(body["blocks"]) == 14
    assert max(len(text) for text in texts) <= 3000
    assert texts[1].startswith("*Nodes (600):* ") and texts[1].endswith("more")
    assert body["blocks"][-1]["elements"][0]["text"].startswith("… and 990 more alerts not shown")
    assert body["text"].startswith("[FIRING:1000]")


def test_slack_resolved_message() -> None:
    body = render(message(alert("gpu-001", status="resolved")))
    assert body["text"] == "[RESOLVED:1] ib_port_errors leaf_switch=leaf-07 (critical)"
    assert body["blocks"][3]["text"]["text"].startswith(":large_green_circle: *<")


@pytest.mark.parametrize(
    ("reply", "permanent", "rejected", "retry_after"),
    [
        (SERVER_ERROR, False, False, None),
        (rate_limited(2), False, False, 2.0),
        (GONE, True, True, None),
        (Reply(410, body="channel_is_archived"), True, True, None),
        (Reply(400, body="invalid_payload"), False, True, None),
    ],
)
def test_http_errors_are_classified(
    reply: Reply, permanent: bool, rejected: bool, retry_after: float | None
) -> None:
    with start_receiver(reply) as receiver:
        with pytest.raises(TransportError) as caught:
            transport_for(target("slack", receiver.url)).notify(message(alert("gpu-001")))
    assert caught.value.status_code == reply.status
    assert (caught.value.permanent, caught.value.rejected) == (permanent, rejected)
    assert caught.value.retry_after == retry_after
    assert caught.value.message == f"HTTP {reply.status}: {reply.body}"


def test_a_slow_receiver_times_out(settings: pytest.FixtureRequest) -> None:
    settings.HTTP_TIMEOUT_SECONDS = 0.3  # type: ignore[attr-defined]
    with start_receiver(slow(1.5)) as receiver:
        with pytest.raises(TransportError) as caught:
            transport_for(target("webhook", receiver.url)).notify(message(alert("gpu-001")))
    assert caught.value.message == "timed out after 0.3 s (whole request)"
    assert not caught.value.rejected


def test_a_closed_port_is_a_retryable_connection_error() -> None:
    with start_receiver() as receiver:
        url = receiver.url
    with pytest.raises(TransportError) as caught:
        transport_for(target("webhook", url)).notify(message(alert("gpu-001")))
    assert caught.value.message == "connection failed: ConnectionRefusedError"
    assert not caught.value.rejected


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    now = datetime(2026, 5, 1, 10, 0, 0, tzinfo=UTC)
    assert parse_retry_after("7", now) == 7.0
    assert parse_retry_after("Fri, 01 May 2026 10:00:30 GMT", now) == 30.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


def test_the_documented_verification_snippet_accepts_our_signature_and_refuses_replays() -> None:
    from pathlib import Path

    from alerts.transports.webhook import sign, verify

    docs = Path(__file__).resolve().parents[2] / "docs" / "alerts.md"
    text = docs.read_text()
    start = text.index("```python", text.index("### Webhook")) + len("```python")
    namespace: dict[str, object] = {}
    exec(text[start : text.index("```", start)], namespace)  # noqa: S102 - our own docs
    verify_docs = namespace["verify_clusterwatch"]
    body, now = b'{"version":"4"}', int(time.time())
    header = sign(body, "s3cret", now)
    assert verify_docs(header, body, "s3cret") is True  # type: ignore[operator]
    assert verify_docs(header, body + b" ", "s3cret") is False  # type: ignore[operator]
    assert verify_docs(header, body, "other") is False  # type: ignore[operator]
    old = sign(body, "s3cret", now - 301)
    assert verify_docs(old, body, "s3cret") is False  # type: ignore[operator]
    assert (verify(header, body, "s3cret"), verify(old, body, "s3cret")) == (True, False)
    assert verify(sign(body, "s3cret", now - 299), body, "s3cret") is True


@pytest.mark.parametrize(
    ("token", "basic", "authorization"),
    [("t0ken", "", "Bearer t0ken"), ("", "am:pa:ss", "Basic YW06cGE6c3M=")],
)
def test_alertmanager_requests_carry_the_configured_auth_and_headers(
    settings: pytest.FixtureRequest, token: str, basic: str, authorization: str
) -> None:
    settings.ALERTMANAGER_BEARER_TOKEN = token  # type: ignore[attr-defined]
    settings.ALERTMANAGER_BASIC_AUTH = basic  # type: ignore[attr-defined]
    settings.ALERTMANAGER_HEADERS = {"X-Scope-OrgID": "team-a"}  # type: ignore[attr-defined]
    with start_receiver(Reply(200, body='{"silenceID":"abc"}')) as receiver:
        transport = transport_for(target("alertmanager", receiver.url))
        transport.notify(message(alert("gpu-001")))
        assert transport.put_silence({"matchers": []}) == "abc"  # type: ignore[attr-defined]
    assert [r.path for r in receiver.requests] == ["/api/v2/alerts", "/api/v2/silences"]
    for request in receiver.requests:
        assert request.headers["Authorization"] == authorization
        assert request.headers["X-Scope-OrgID"] == "team-a"


def test_alertmanager_tls_is_verified_against_the_configured_ca_bundle(
    settings: pytest.FixtureRequest, tmp_path: Path
) -> None:
    cert, key = self_signed_certificate(tmp_path)
    with start_receiver(tls=(cert, key)) as receiver:
        transport = transport_for(target("alertmanager", receiver.url))
        with pytest.raises(TransportError) as untrusted:
            transport.notify(message(alert("gpu-001")))
        settings.ALERTMANAGER_CA_BUNDLE = str(cert)  # type: ignore[attr-defined]
        assert transport.notify(message(alert("gpu-001"))) == 200
    assert untrusted.value.message == "connection failed: SSLCertVerificationError"
    assert [r.path for r in receiver.requests] == ["/api/v2/alerts"]


def test_plain_http_goes_through_http_proxy_unless_no_proxy_names_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with start_receiver() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "")
        code = transport_for(target("webhook", "http://hooks.example.invalid/h?x=1")).notify(
            message(alert("gpu-001"))
        )
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        transport_for(target("webhook", proxy.url + "/direct")).notify(message(alert("gpu-001")))
    assert code == 200
    assert [r.path for r in proxy.requests] == ["http://hooks.example.invalid/h?x=1", "/direct"]
    assert proxy.requests[0].headers["Host"] == "hooks.example.invalid"
