"""Slack incoming webhook: one Block Kit message per alert group."""

from __future__ import annotations

from typing import Any

from .base import HttpTransport
from .payloads import AlertPayload, SlackMessage, WebhookMessage

MAX_ALERT_BLOCKS = 10  # alerts detailed one by one; the rest are counted
MAX_SECTION_CHARS = 2900  # Slack refuses section text over 3,000 characters
MAX_HEADER_CHARS = 150
SEVERITY_RANK = {"critical": 3, "error": 3, "warning": 2, "info": 1}
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


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def scope(labels: dict[str, str], skip: set[str]) -> str:
    """``key=value`` pairs of the labels that say where an alert is."""
    return " ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in skip)


def severity(message: WebhookMessage) -> str:
    """The most severe severity among the message's alerts."""
    values = [a["labels"].get("severity", "") for a in message["alerts"]]
    return max(values, key=lambda v: SEVERITY_RANK.get(v, 0), default="")


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
    if run := notes.get("run"):
        lines.append("Run: " + link(notes.get("run_url", ""), run))
    return clip("\n".join(lines), MAX_SECTION_CHARS)


def section(text: str) -> dict[str, Any]:
    """A mrkdwn section block."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def title(message: WebhookMessage) -> str:
    """``[FIRING:3] rule leaf_switch=leaf-07 (critical)`` — the headline and fallback text."""
    firing = sum(1 for a in message["alerts"] if a["status"] == "firing")
    rule = message["commonLabels"].get("alertname", "") or message["groupLabels"].get(
        "alertname", ""
    )
    count = firing if message["status"] == "firing" else len(message["alerts"])
    where = scope(message["groupLabels"], {"alertname"})
    level = severity(message)
    text = f"[{message['status'].upper()}:{count + message['truncatedAlerts']}] {rule} {where}"
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
            "text": {"type": "plain_text", "text": clip(headline, MAX_HEADER_CHARS)},
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
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(footer)}]})
    return SlackMessage(text=escape(headline), blocks=blocks)


class SlackTransport(HttpTransport):
    """POSTs the Block Kit message to the incoming-webhook URL."""

    def notify(self, message: WebhookMessage, delivery_id: str = "") -> int:
        return self.post_json(self.target.url, render(message))
