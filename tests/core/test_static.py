"""plotly.js comes from our static files (the copy inside the plotly package), never a CDN."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from django.templatetags.static import static
from django.test import Client

PLOTLY_JS = (
    Path(importlib.util.find_spec("plotly").origin).parent / "package_data" / "plotly.min.js"
)


def _body(response: object) -> bytes:
    return b"".join(response.streaming_content)


def test_plotly_js_is_served_from_static_vendor_plotly(client: Client) -> None:
    response = client.get("/static/vendor/plotly/plotly.min.js")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert _body(response) == PLOTLY_JS.read_bytes()


def test_plotly_js_is_in_the_manifest_with_a_hashed_name(client: Client) -> None:
    url = static("vendor/plotly/plotly.min.js")

    assert (
        url.startswith("/static/vendor/plotly/plotly.min.")
        and url != "/static/vendor/plotly/plotly.min.js"
    )
    response = client.get(url)
    assert response.status_code == 200
    assert "immutable" in response["Cache-Control"]


@pytest.mark.django_db
def test_static_files_need_no_login(client: Client) -> None:
    assert client.get(static("css/app.css")).status_code == 200
    assert client.get(static("js/live.js")).status_code == 200
