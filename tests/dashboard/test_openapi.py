"""/api/v1/openapi.json: a valid OpenAPI 3.1 document that describes every URL pattern under /api/."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db
# Django's converters in a route: <int:silence_id>, <path:name>, <nodename:name>, <name>.
CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


def api_routes(patterns: list, prefix: str = "") -> set[str]:
    """Every routed path under /api/ in OpenAPI's syntax (``/api/v1/nodes/{name}``)."""
    found: set[str] = set()
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found |= api_routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and route.startswith("api/"):
            found.add("/" + CONVERTER.sub(r"{\1}", route))
    return found


def test_the_document_is_valid_openapi(logged_in_client: Client) -> None:
    doc = logged_in_client.get("/api/v1/openapi.json").json()
    validate(doc)  # raises with the path of the first error
    assert doc["openapi"] == "3.1.0"


def test_every_api_url_pattern_is_described(logged_in_client: Client) -> None:
    documented = set(logged_in_client.get("/api/v1/openapi.json").json()["paths"])
    routes = api_routes(get_resolver().url_patterns)
    assert routes == documented - {"/api/v1/example"}  # another test registers that one
    assert len(routes) >= 14


def test_alerts_silences_and_coverage_are_described_with_their_methods(
    logged_in_client: Client,
) -> None:
    paths = logged_in_client.get("/api/v1/openapi.json").json()["paths"]
    assert {path: sorted(paths[path]) for path in (
        "/api/v1/alerts", "/api/v1/silences", "/api/v1/silences/{silence_id}", "/api/v1/coverage",
    )} == {
        "/api/v1/alerts": ["get"], "/api/v1/silences": ["get", "post"],
        "/api/v1/silences/{silence_id}": ["delete", "get"], "/api/v1/coverage": ["get"],
    }  # fmt: skip
