"""``POST /api/v1/runs/<namespace>/<name>/checkpoints``: a training job reports a saved checkpoint.

Answers: 201 created, 200 already known (same step), 400 bad payload (naming the field; the
bounds are ``core.validation``'s), 413 body over 64 KiB,
401 no token, 403 token without the ``checkpoints`` scope, 404 unknown run (unless the token
may create runs). Authentication itself is ``core.auth.BearerTokenMiddleware``'s job.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_POST

from core.auth import unauthorized
from core.models import APIToken
from core.validation import InputError, error_response, json_body

from .checkpoint_push import PayloadError, RunNotFound, parse_push, push_checkpoint
from .selectors import checkpoint_json

MAX_BODY_BYTES = 64 * 1024


def _decode(request: HttpRequest) -> object:
    try:
        return json_body(request, max_bytes=MAX_BODY_BYTES)
    except InputError as exc:
        raise PayloadError(exc.field, exc.detail, exc.status) from None


@require_POST
def push(request: HttpRequest, namespace: str, name: str) -> JsonResponse:
    """Record one checkpoint of a run, idempotently per step."""
    token: APIToken | None = getattr(request, "api_token", None)
    if token is None:
        return unauthorized("a bearer token is required to push checkpoints")
    if not token.allows(APIToken.Scope.CHECKPOINTS):
        return JsonResponse(
            {"error": "forbidden", "detail": "token lacks the 'checkpoints' scope"}, status=403
        )
    try:
        checkpoint_push = parse_push(_decode(request))
        result = push_checkpoint(
            namespace,
            name,
            checkpoint_push,
            create_run=token.allows(APIToken.Scope.CREATE_RUNS),
        )
    except PayloadError as exc:
        return error_response(exc)
    except RunNotFound:
        return JsonResponse(
            {"error": "not_found", "detail": f"no run {namespace}/{name}"}, status=404
        )
    job = result.checkpoint.job
    body = {
        "run": {"namespace": job.namespace, "name": job.name, "state": job.state},
        "checkpoint": checkpoint_json(result.checkpoint),
        "created": result.created,
        "run_created": result.run_created,
    }
    return JsonResponse(body, status=201 if result.created else 200)
