"""Slack incoming webhook: one Block Kit message per alert group.

Every text is clipped to Block Kit's limits (https://api.slack.com/reference/block-kit/blocks:
section text 3,000, header 150, context 10 elements, 50 blocks; message text 40,000)
on a boundary that never splits an ``&amp;`` entity or a ``<url|text>`` link, so
Slack never refuses a message for its size (a 400 is not retried: it would be lost).
"""

from __future__ import annotations

import re
from typing import Any

from ..severity import rank
from .base import HttpTransport
from .payloads import AlertPayload, SlackMessage, WebhookMessage

MAX_ALERT_BLOCKS = 10  # alerts detailed one by one; the rest are counted
MAX_SECTION_CHARS = 3000  # Slack refuses section text over 3,000 characters
MAX_HEADER_CHARS = 150
MAX_CONTEXT_CHARS = 3000  # a context element's text object
MAX_MESSAGE_TEXT = 40_000
ELLIPSIS = "…"
# What clip() never cuts in half: an entity escape() writes, or a mrkdwn <link|text>.
UNBREAKABLE = re.compile(r"&(?:amp|lt|gt);|<[^<>]*>")
ICONS = {"firing": ":red_circle:", "resolved": ":large_green_circle:"}
# Labels shown elsewhere in the message, not repeated in each alert's scope.
QUIET_LABELS = {"alertname", "severity", "node"}


def escape(text: str) -> str:
    """Escape Slack mrkdwn control characters in untrusted text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def link(url: str, text: str) -> str:
    """A mrkdwn link whose text is escaped; plain escaped text when there is no URL."""
    if not url:
        return escape(text)
    return f"<{escape(url).replace('|', '%7C')}|{escape(text)}>"


def clip(text: str, limit: int, mrkdwn: bool = True) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, never inside an entity or link.

    ``mrkdwn=False``: plain text (a header), where nothing is an entity or a link.
    """
    if len(text) <= limit:
        return text
    cut = limit - len(ELLIPSIS)
    for token in UNBREAKABLE.finditer(text if mrkdwn else ""):
        if token.start() >= cut:
            break
        if token.end() > cut:
            cut = token.start()
            break
    return text[:cut] + ELLIPSIS


def scope(labels: dict[str, str], skip: set[str]) -> str:
    """``key=value`` pairs of the labels that say where an alert is."""
    return " ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in skip)


def severity(message: WebhookMessage) -> str:
    """The most severe severity among the message's alerts."""
    values = [a["labels"].get("severity", "") for a in message["alerts"]]
    return max(values, key=rank, default="")


def node_list(alerts: list[AlertPayload]) -> str:
    """The nodes of a group as links, cut to fit one section."""
    nodes: dict[str, str] = {}
    for alert in alerts:
        if node := alert["labels"].get("node"):
            nodes.setdefault(node, alert["annotations"].get("node_url", ""))
    text, shown = f"*Nodes ({len(nodes)}):* ", 0
    for node, url in sorted(nodes.items()):
        piece = link(url, node) + ", "
        if len(text) + len(piece) > MAX_SECTION_CHARS - 40:
            break
        text, shown = text + piece, shown + 1
    text = text.rstrip(", ")
    return text + (f" … and {len(nodes) - shown} more" if shown < len(nodes) else "")


def alert_line(alert: AlertPayload, group_labels: dict[str, str]) -> str:
    """One alert: node link, scope, value, summary and run."""
    labels, notes = alert["labels"], alert["annotations"]
    head = ICONS[alert["status"]]
    if node := labels.get("node"):
        head += " *" + link(notes.get("node_url", ""), node) + "*"
    if where := scope(labels, QUIET_LABELS | set(group_labels)):
        head += f" `{escape(where)}`"
    if value := notes.get("value"):
        head += f" value *{escape(value)}*"
    lines = [head]
    if summary := notes.get("summary"):
        lines.append(escape(summary))
    if hurts := notes.get("hurts"):
        lines.append(link(notes.get("run_url", ""), hurts))
    elif run := notes.get("run"):
        lines.append("Run: " + link(notes.get("run_url", ""), run))
    if acked := notes.get("acknowledged"):
        lines.append(":eyes: acknowledged " + escape(acked))
    if assignee := notes.get("assignee"):
        lines.append("Assigned to " + escape(assignee))
    return clip("\n".join(lines), MAX_SECTION_CHARS)


def section(text: str) -> dict[str, Any]:
    """A mrkdwn section block, clipped to Slack's limit."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, MAX_SECTION_CHARS)}}


def firing_count(message: WebhookMessage) -> int:
    """Firing alerts: those listed, plus cut ones when every listed alert fires.

    Firing alerts come first (``build_message``), so once a listed alert is
    resolved, every cut alert is resolved too. Slack channels' messages are
    stored uncut (the rendering cuts), so there the count is exact.
    """
    alerts = message["alerts"]
    firing = sum(1 for a in alerts if a["status"] == "firing")
    return firing + (message["truncatedAlerts"] if firing == len(alerts) else 0)


def title(message: WebhookMessage) -> str:
    """``[FIRING:3] rule leaf_switch=leaf-07 (critical)`` — the headline and fallback text."""
    rule = message["commonLabels"].get("alertname", "") or message["groupLabels"].get(
        "alertname", ""
    )
    total = len(message["alerts"]) + message["truncatedAlerts"]
    count = firing_count(message) if message["status"] == "firing" else total
    where = scope(message["groupLabels"], {"alertname"})
    level = severity(message)
    text = f"[{message['status'].upper()}:{count}] {rule} {where}"
    return text.strip() + (f" ({level})" if level else "")


def render(message: WebhookMessage) -> SlackMessage:
    """The Block Kit message for one alert group."""
    alerts = message["alerts"]
    headline = title(message)
    summary = [
        f"*Severity:* {escape(severity(message) or 'n/a')}",
        f"*Rule:* {escape(message['commonLabels'].get('alertname', 'several'))}",
        f"*Scope:* {escape(scope(message['groupLabels'], {'alertname'}) or 'all')}",
    ]
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": clip(headline, MAX_HEADER_CHARS, mrkdwn=False)},
        },
        section("   ".join(summary)),
    ]
    if any("node" in a["labels"] for a in alerts):
        blocks.append(section(node_list(alerts)))
    ordered = sorted(alerts, key=lambda a: (a["status"] != "firing", a["labels"].get("node", "")))
    blocks += [section(alert_line(a, message["groupLabels"])) for a in ordered[:MAX_ALERT_BLOCKS]]
    hidden = len(alerts) - MAX_ALERT_BLOCKS + message["truncatedAlerts"]
    footer = [link(message["externalURL"], "ClusterWatch")]
    if hidden > 0:
        footer.insert(0, f"… and {hidden} more alerts not shown")
    footer_text = clip(" · ".join(footer), MAX_CONTEXT_CHARS)
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": footer_text}]})
    return SlackMessage(text=clip(escape(headline), MAX_MESSAGE_TEXT), blocks=blocks)


class SlackTransport(HttpTransport):
    """POSTs the Block Kit message to the incoming-webhook URL."""

    def notify(self, message: WebhookMessage, delivery_id: str = "") -> int:
        return self.post_json(self.target.url, render(message))
