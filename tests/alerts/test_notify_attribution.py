"""Every channel kind says whose run an alert hurts, and links the run's timeline."""

from __future__ import annotations

import pytest
from django.core import mail

from tests.alerts.notify_helpers import flush_at, make_alert, make_channel, send_all
from tests.alerts.validators import valid_slack, validated_payloads  # noqa: F401 - the fixture
from tests.support.receivers import start_receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("validated_payloads")]
HURTS = [{"namespace": "llm-pretrain", "run": "llama-70b", "queue": "pretrain", "cluster_queue": "cq-pretrain",
          "team": "ml-infra", "gpus": 128, "nodes": 16}]  # fmt: skip
# make_alert: pending since 09:54, last match 10:00 → 128 GPUs × 6 min = 12.8 GPU-hours.
TEXT = "hurts: llm-pretrain/llama-70b (128 GPUs on 16 nodes) since 09:54 — 13 GPU-hours at stake so far"
RUN_URL = "http://cw.example/runs/llm-pretrain/llama-70b/"


@pytest.fixture(autouse=True)
def external_url(settings) -> None:  # noqa: ANN001
    settings.EXTERNAL_URL = "http://cw.example"


def hurting() -> None:
    alert = make_alert("gpu-001", namespace="llm-pretrain", run="llama-70b", team="ml-infra")
    alert.context = {**alert.context, "hurts": HURTS}
    alert.save(update_fields=["context"])


@pytest.mark.parametrize("kind", ["webhook", "alertmanager", "pagerduty"])
def test_json_channels_carry_the_hurts_annotation_and_the_run_link(kind: str) -> None:
    hurting()
    with start_receiver() as receiver:
        make_channel(kind, receiver.url, secret="key" if kind == "pagerduty" else "")
        flush_at(0)
        flush_at(30)
        send_all()
    body = receiver.requests[0].json()
    if kind == "webhook":
        notes = body["alerts"][0]["annotations"]
    elif kind == "alertmanager":
        notes = body[0]["annotations"]
    else:
        notes = body["payload"]["custom_details"]["annotations"]
        assert {"href": RUN_URL, "text": "Run llm-pretrain/llama-70b"} in body["links"]
    assert (notes["hurts"], notes["run_url"]) == (TEXT, RUN_URL)


def test_slack_links_the_hurts_line_to_the_run() -> None:
    hurting()
    with start_receiver() as receiver:
        make_channel("slack", receiver.url)
        flush_at(0)
        flush_at(30)
        send_all()
    body = receiver.requests[0].json()
    valid_slack(body)
    lines = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]
    assert any(f"<{RUN_URL}|{TEXT}>" in line for line in lines)


def test_email_shows_the_hurts_line_in_text_and_html(settings) -> None:  # noqa: ANN001
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    hurting()
    make_channel("email", "", recipients="ops@cw.example")
    flush_at(0)
    flush_at(30)
    send_all()
    message = mail.outbox[0]
    assert f"  hurts: {TEXT}\n" in message.body
    html = message.alternatives[0][0]
    assert f'<br><a href="{RUN_URL}">{TEXT}</a>' in html
