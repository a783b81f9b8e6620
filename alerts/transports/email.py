"""Email: one mail per alert group, plain text and HTML, through Django's email backend.

SMTP comes from the environment (``EMAIL_HOST``, ``EMAIL_PORT``, ``EMAIL_HOST_USER``,
``EMAIL_HOST_PASSWORD``, ``EMAIL_USE_TLS`` / ``EMAIL_USE_SSL``, ``EMAIL_TIMEOUT``,
``DEFAULT_FROM_EMAIL``); recipients are the channel's. The subject is the same
headline Slack shows; each mail carries the ``X-ClusterWatch-Delivery`` id.
"""

from __future__ import annotations

import smtplib

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.utils.html import escape, format_html, format_html_join

from .base import Transport, TransportError
from .payloads import AlertPayload, WebhookMessage
from .slack import title
from .webhook import DELIVERY_HEADER

SMTP_OK = 250
SHOWN_NOTES = (
    "summary", "value", "hurts", "run", "node_url", "run_url", "acknowledged", "assignee",
)  # fmt: skip


def scope(alert: AlertPayload) -> str:
    """``key=value`` pairs of every label but the name and severity."""
    skip = {"alertname", "severity"}
    return " ".join(f"{k}={v}" for k, v in sorted(alert["labels"].items()) if k not in skip)


def plain_text(message: WebhookMessage) -> str:
    """The text part: one paragraph per alert, then how many were left out."""
    parts = [title(message), ""]
    for alert in message["alerts"]:
        parts.append(f"[{alert['status'].upper()}] {scope(alert)}")
        notes = alert["annotations"]
        parts += [f"  {name}: {notes[name]}" for name in SHOWN_NOTES if notes.get(name)]
        parts += [f"  alert: {alert['generatorURL']}", ""]
    if message["truncatedAlerts"]:
        parts.append(f"… and {message['truncatedAlerts']} more alerts not listed.")
    parts.append(f"ClusterWatch: {message['externalURL']}")
    return "\n".join(parts) + "\n"


def _row(alert: AlertPayload) -> tuple[str, str, str, str]:
    notes = alert["annotations"]
    summary = escape(notes.get("summary", ""))
    if hurts := notes.get("hurts"):  # the run it hurts, linked to the run's timeline
        link = format_html('<br><a href="{}">{}</a>', notes.get("run_url", ""), hurts)
        summary = format_html("{}{}", summary, link)
    return (alert["status"], scope(alert), summary, alert["generatorURL"])


def html(message: WebhookMessage) -> str:
    """The HTML part: a table of the alerts; every value escaped."""
    rows = format_html_join(
        "\n",
        '<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td><a href="{}">alert</a></td></tr>',
        (_row(alert) for alert in message["alerts"]),
    )
    more = message["truncatedAlerts"]
    tail = format_html("<p>… and {} more alerts not listed.</p>", more) if more else ""
    return format_html(
        "<html><body><h2>{}</h2><table>\n{}\n</table>{}"
        '<p><a href="{}">ClusterWatch</a></p></body></html>',
        title(message),
        rows,
        tail,
        escape(message["externalURL"]),
    )


class EmailTransport(Transport):
    """Sends one multipart mail to the channel's recipients."""

    def notify(self, message: WebhookMessage, delivery_id: str = "") -> int:
        mail = EmailMultiAlternatives(
            subject=title(message),
            body=plain_text(message),
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=list(self.target.recipients),
            headers={DELIVERY_HEADER: delivery_id} if delivery_id else {},
            connection=get_connection(timeout=settings.EMAIL_TIMEOUT),
        )
        mail.attach_alternative(html(message), "text/html")
        try:
            mail.send()
        except smtplib.SMTPRecipientsRefused as exc:
            refused = sorted(exc.recipients)
            raise TransportError(f"recipients refused: {refused}", rejected=True) from None
        except (smtplib.SMTPException, OSError) as exc:
            raise TransportError(f"SMTP failed: {type(exc).__name__}: {exc}") from None
        self.last_answer = f"{SMTP_OK}: accepted for {len(self.target.recipients)} recipient(s)"
        return SMTP_OK
