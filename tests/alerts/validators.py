"""Validators nobody here wrote, applied to every payload the notification tests see.

Webhook bodies: ``prometheus_alert_model.AlertGroup`` (pydantic model of
Alertmanager's webhook payload; PyPI ``prometheus-alert-model-leo``, the
pydantic-2 build of ``prometheus-alert-model``). Slack bodies: ``slack_sdk``'s
Block Kit models (``Block.parse`` + ``validate_json``, which enforce the section
3,000 / header 150 / context 10-element limits), plus the message-level limits
the models do not check (50 blocks, 40,000 characters of text, 3,000 per
context text element: https://api.slack.com/reference/block-kit/blocks).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_alert_model import AlertGroup
from slack_sdk.models.blocks import Block

from tests.support import receivers

MAX_BLOCKS = 50
MAX_MESSAGE_TEXT = 40_000
MAX_CONTEXT_TEXT = 3_000


def valid_webhook(body: dict[str, Any]) -> AlertGroup:
    """``body`` parsed by prometheus-alert-model (raises on an invalid payload)."""
    group = AlertGroup.model_validate(body)
    assert group.version == "4"
    assert [a.fingerprint for a in group.alerts] == [a["fingerprint"] for a in body["alerts"]]
    return group


def valid_slack(body: dict[str, Any]) -> list[Block]:
    """Every block of ``body`` parsed and validated by slack_sdk; message limits checked."""
    assert set(body) == {"text", "blocks"}
    assert 0 < len(body["text"]) <= MAX_MESSAGE_TEXT
    assert 0 < len(body["blocks"]) <= MAX_BLOCKS
    blocks = []
    for raw in body["blocks"]:
        block = Block.parse(raw)
        assert block is not None, f"unknown block {raw!r}"
        block.validate_json()  # raises SlackObjectFormationError over a limit
        assert block.to_dict() == raw  # nothing unknown that slack_sdk would drop
        if raw["type"] == "context":
            assert all(len(e["text"]) <= MAX_CONTEXT_TEXT for e in raw["elements"])
        blocks.append(block)
    return blocks


def valid_payload(body: Any) -> None:
    """Validate a body by its shape: Slack blocks, a webhook v4 message, or other JSON."""
    if isinstance(body, dict) and "blocks" in body:
        valid_slack(body)
    elif isinstance(body, dict) and body.get("version") == "4":
        valid_webhook(body)


@pytest.fixture
def validated_payloads() -> Iterator[None]:
    """At teardown: every JSON body any local receiver got is valid for its kind."""
    receivers.STARTED.clear()
    yield
    for receiver in receivers.STARTED:
        for request in receiver.requests:
            if request.headers.get("Content-Type") == "application/json":
                valid_payload(json.loads(request.body))
    receivers.STARTED.clear()
