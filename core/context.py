"""Template context shared by every page: the navigation."""

from __future__ import annotations

from django.http import HttpRequest

NAVIGATION = [
    ("Overview", "/"),
    ("Fabric", "/fabric/"),
    ("Nodes", "/nodes/"),
    ("Runs", "/runs/"),
    ("Queues", "/queues/"),
    ("Alerts", "/alerts/"),
    ("Coverage", "/coverage/"),
    ("Admin", "/admin/"),
]


def navigation(request: HttpRequest) -> dict[str, object]:
    """The nav entries, with the current one marked."""
    path = request.path

    def active(url: str) -> bool:
        return path == "/" if url == "/" else path.startswith(url)

    return {"navigation": [(label, url, active(url)) for label, url in NAVIGATION]}
