"""The OpenAPI document, built from a registry any module can append to.

Other apps describe their endpoints with ``register_path`` (at import time of
their URL module, or from ``AppConfig.ready``) and shared schemas with
``register_schema``; ``/api/v1/openapi.json`` serves ``document()``. Keeping
the registry in plain dicts means no framework and no import of dashboard from
below: config (or an app's ``ready``) may call it.
"""

from __future__ import annotations

import copy
from typing import Any

Operation = dict[str, Any]

_PATHS: dict[str, dict[str, Operation]] = {}
_SCHEMAS: dict[str, dict[str, Any]] = {}
ERROR_RESPONSE = {
    "description": "Bad parameter: names it",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
UNAUTHORIZED = {"description": "Missing or bad credentials (JSON, never a redirect)"}


def register_path(path: str, method: str, operation: Operation) -> None:
    """Describe ``method`` on ``path`` (OpenAPI path syntax, e.g. ``/api/v1/nodes/{name}``)."""
    operation = {"responses": {}, **operation}
    operation["responses"].setdefault("401", UNAUTHORIZED)
    _PATHS.setdefault(path, {})[method.lower()] = operation


def register_schema(name: str, schema: dict[str, Any]) -> None:
    """Add a named component schema (referenced as ``#/components/schemas/<name>``)."""
    _SCHEMAS[name] = schema


def query(
    name: str, description: str, schema: dict[str, Any], required: bool = False
) -> dict[str, Any]:
    """A query-parameter object."""
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
    }


def json_response(description: str, schema_name: str) -> dict[str, Any]:
    """A 200 response whose body is the named component schema."""
    ref = {"$ref": f"#/components/schemas/{schema_name}"}
    return {"description": description, "content": {"application/json": {"schema": ref}}}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of everything registered so far."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "ClusterWatch API", "version": "1"},
        "components": {
            "schemas": copy.deepcopy(_SCHEMAS),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
            },
        },
        "security": [{"bearer": []}, {"session": []}],
        "paths": {path: dict(sorted(ops.items())) for path, ops in sorted(_PATHS.items())},
    }


register_schema(
    "Error",
    {
        "type": "object",
        "required": ["error", "parameter", "detail"],
        "properties": {
            "error": {"const": "bad_request"},
            "parameter": {"type": "string", "description": "the query parameter at fault"},
            "detail": {"type": "string"},
        },
    },
)
