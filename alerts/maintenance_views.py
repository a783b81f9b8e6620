"""The staff form behind "Put node in maintenance" / "End maintenance" on the node page.

Thin: check the node and the user, call ``alerts.maintenance``, go back to the node page
with a message. The node's name travels in the form body (names may hold ``/`` or newlines).
"""

from __future__ import annotations

from urllib.parse import quote

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.views.decorators.http import require_POST

from ingest.models import Node

from . import maintenance

ACTIONS = ("start", "end")


@require_POST
def node_maintenance(request: HttpRequest) -> HttpResponse:
    """``POST /maintenance/`` {node, action: start|end, comment}: staff only; back to the node page."""
    if not request.user.is_staff:
        return JsonResponse(
            {"error": "forbidden", "detail": "maintenance needs a staff account"}, status=403
        )
    name, action = request.POST.get("node", ""), request.POST.get("action", "")
    if action not in ACTIONS:
        return JsonResponse({"error": "bad_request", "field": "action", "detail": "action: expected start or end"},
                            status=400)  # fmt: skip
    if not Node.objects.filter(name=name).exists():
        return JsonResponse({"error": "not_found", "detail": "no such node"}, status=404)
    try:
        if action == "start":
            maintenance.start(name, request.user, request.POST.get("comment", ""))
            messages.success(
                request, "The node is in maintenance: its alerts are silenced until you end it."
            )
        else:
            maintenance.end(name, request.user)
            messages.success(request, "Maintenance ended: the node's silence has expired.")
    except maintenance.MaintenanceError as exc:
        messages.error(request, f"Not done — {exc.field}: {exc.message}")
    return HttpResponseRedirect(f"/nodes/{quote(name, safe='')}/")
