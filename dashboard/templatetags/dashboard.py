"""Template helpers: links to node pages (names are untrusted label values)."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

import orjson
from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from ..api.serialize import iso

register = template.Library()


@register.filter
def node_url(name: str, at: datetime | str | None = None) -> str:
    """``/nodes/<name>/`` with the name percent-encoded, optionally ``?at=`` a time."""
    url = f"/nodes/{quote(str(name), safe='')}/"
    if at:
        url += "?at=" + quote(at if isinstance(at, str) else iso(at) or "")
    return url


@register.filter
def run_url(namespace: str, name: str | None) -> str:
    """``/runs/<namespace>/<name>/`` percent-encoded."""
    return f"/runs/{quote(str(namespace), safe='')}/{quote(str(name or ''), safe='')}/"


@register.filter
def duration(seconds: float | None) -> str:
    """A lag in seconds, humanised (``42 s``, ``3.5 min``, ``2.1 h``)."""
    if seconds is None:
        return "—"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


@register.filter
def get_item(mapping: dict, key: str) -> object:
    """``mapping[key]`` in a template (None when absent)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def split(value: str) -> list[str]:
    """Whitespace-split a literal list in a template."""
    return value.split()


@register.filter
def short_time(value: datetime | str | None) -> str:
    """``11-29 21:23 UTC`` from a datetime or an ISO string (dashboards read times at a glance)."""
    if not value:
        return "—"
    moment = (
        datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else value
    )
    return moment.astimezone(UTC).strftime("%m-%d %H:%M UTC")


#: What Django's ``json_script`` escapes, so the JSON cannot close its <script> element.
_SCRIPT_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


@register.filter
def figure_json(value: object, element_id: str) -> SafeString:
    """``json_script`` for Plotly figures, encoded by orjson (a node page's figures are ~190 kB:
    the standard encoder took ~5 ms of the page). Same escaping; UTC times end in ``Z``."""
    text = orjson.dumps(value, option=orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS).decode()
    return format_html(
        '<script id="{}" type="application/json">{}</script>',
        element_id,
        mark_safe(text.translate(_SCRIPT_ESCAPES)),  # noqa: S308 - escaped just above
    )
