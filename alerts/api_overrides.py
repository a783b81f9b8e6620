"""JSON API of per-pool and per-GPU-model rule overrides (the admin edits the same rows).

``GET /api/v1/rule-overrides`` lists them; ``POST`` {rule, scope, value, params} creates or
replaces the override of that rule for that pool / GPU model (params validated like the rule
setting's: a wrong type or an unknown name is a 400 naming it); ``DELETE
/api/v1/rule-overrides/<id>`` removes one. Writes need the admin's model permissions
(``alerts.add_ruleoverride``, ``alerts.change_ruleoverride``, ``alerts.delete_ruleoverride``)
and, with a bearer token, the silence scope. Nothing is changed on an error.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from core.validation import InputError, check_text, json_body

from .api import bad_request, forbidden
from .models import OverrideScope, RuleOverride
from .rules import RuleConfigError, validate_params

FIELDS = {"rule", "scope", "value", "params"}
MAX_BODY_BYTES = 64 * 1024


def serialize(row: RuleOverride) -> dict[str, Any]:
    """The API shape of an override."""
    return {
        "id": row.pk,
        "rule": row.rule,
        "scope": row.scope,
        "value": row.value,
        "params": row.params,
        "updated_at": row.updated_at.isoformat(),
        "updated_by": row.updated_by.get_username() if row.updated_by else None,
    }


def _allowed(request: HttpRequest, action: str) -> bool:
    if not request.user.has_perm(f"alerts.{action}_ruleoverride"):
        return False
    token = getattr(request, "api_token", None)
    return token is None or token.allows(settings.ALERTS_SILENCE_TOKEN_SCOPE)


def _validated(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InputError("body", "expected a JSON object")
    unknown = set(body) - FIELDS
    if unknown:
        raise InputError(
            str(sorted(unknown)[0])[:100], f"unknown field (expected {', '.join(sorted(FIELDS))})"
        )
    if body.get("scope") not in OverrideScope.values:
        raise InputError("scope", f"expected one of {', '.join(OverrideScope.values)}")
    value = check_text(body.get("value"), "value", max_length=253, required=True)
    try:
        params = validate_params(check_text(body.get("rule"), "rule", max_length=64, required=True),
                                 body.get("params", {}))  # fmt: skip
    except RuleConfigError as exc:
        raise InputError(exc.field, exc.message) from None
    return {"rule": body["rule"], "scope": body["scope"], "value": value, "params": params}


@require_http_methods(["GET", "POST"])
def rule_overrides(request: HttpRequest) -> JsonResponse:
    """``GET`` every override; ``POST`` creates (201) or replaces (200) one."""
    if request.method == "GET":
        rows = RuleOverride.objects.select_related("updated_by")
        return JsonResponse({"overrides": [serialize(r) for r in rows]})
    if not (_allowed(request, "add") and _allowed(request, "change")):
        return forbidden(
            "needs the alerts.add_ruleoverride and alerts.change_ruleoverride permissions"
        )
    try:
        fields = _validated(json_body(request, max_bytes=MAX_BODY_BYTES))
    except InputError as exc:
        if exc.status == 413:
            return JsonResponse(
                {"error": "bad_request", "field": exc.field, "detail": exc.detail}, status=413
            )
        return bad_request(exc.field, exc.detail)
    row, created = RuleOverride.objects.update_or_create(
        rule=fields["rule"], scope=fields["scope"], value=fields["value"],
        defaults={"params": fields["params"], "updated_at": timezone.now(), "updated_by": request.user},
    )  # fmt: skip
    return JsonResponse(serialize(row), status=201 if created else 200)


@require_http_methods(["DELETE"])
def rule_override_detail(request: HttpRequest, override_id: int) -> JsonResponse:
    """``DELETE`` one override (its nodes go back to the rule setting)."""
    if not _allowed(request, "delete"):
        return forbidden("needs the alerts.delete_ruleoverride permission")
    row = RuleOverride.objects.filter(pk=override_id).first()
    if row is None:
        return JsonResponse(
            {"error": "not_found", "detail": f"no override {override_id}"}, status=404
        )
    answer = serialize(row)
    row.delete()
    return JsonResponse(answer)
