"""Every page needs a login; the API answers 401 JSON to anything but a valid token or session."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.templatetags.static import static
from django.test import Client
from django.utils import timezone

from core.context import NAVIGATION
from core.models import APIToken, hash_token

pytestmark = pytest.mark.django_db

MISSING_CREDENTIALS = {
    "error": "unauthorized",
    "detail": "authentication required: send Authorization: Bearer <token>",
}
BAD_TOKEN = {"error": "unauthorized", "detail": "invalid, revoked or expired token"}


def _bearer(raw: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def test_anonymous_page_request_redirects_to_login(client: Client) -> None:
    response = client.get("/?window=1h")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/%3Fwindow%3D1h"


def test_anonymous_admin_request_redirects_to_the_same_login(client: Client) -> None:
    response = client.get("/admin/")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/admin/"


def test_anonymous_api_request_gets_401_json_not_a_redirect(client: Client) -> None:
    response = client.get("/api/v1/whoami")

    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert response.json() == MISSING_CREDENTIALS


def test_valid_bearer_token_authenticates_as_its_user(client: Client, api_token: str) -> None:
    response = client.get("/api/v1/whoami", **_bearer(api_token))

    assert response.status_code == 200
    assert response.json() == {
        "username": "alice",
        "is_staff": False,
        "auth": "token",
        "scope": "read",
    }


def test_token_use_is_recorded(client: Client, api_token: str) -> None:
    client.get("/api/v1/whoami", **_bearer(api_token))

    token = APIToken.objects.get(token_hash=hash_token(api_token))
    assert token.last_used_at is not None


def test_revoked_token_gets_401(client: Client, api_token: str) -> None:
    APIToken.objects.filter(token_hash=hash_token(api_token)).update(revoked_at=timezone.now())

    response = client.get("/api/v1/whoami", **_bearer(api_token))

    assert response.status_code == 401
    assert response.json() == BAD_TOKEN


def test_expired_token_gets_401(client: Client, api_token: str) -> None:
    expired = timezone.now() - timedelta(seconds=1)
    APIToken.objects.filter(token_hash=hash_token(api_token)).update(expires_at=expired)

    response = client.get("/api/v1/whoami", **_bearer(api_token))

    assert response.status_code == 401
    assert response.json() == BAD_TOKEN


def test_unknown_token_gets_401(client: Client, api_token: str) -> None:
    response = client.get("/api/v1/whoami", **_bearer(api_token + "x"))

    assert response.status_code == 401
    assert response.json() == BAD_TOKEN


def test_token_of_a_deactivated_user_gets_401(client: Client, user: object, api_token: str) -> None:
    user.is_active = False
    user.save()

    response = client.get("/api/v1/whoami", **_bearer(api_token))

    assert response.status_code == 401
    assert response.json() == BAD_TOKEN


def test_bearer_token_does_not_open_pages(client: Client, api_token: str) -> None:
    response = client.get("/", **_bearer(api_token))

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_logged_in_session_reaches_the_api(logged_in_client: Client) -> None:
    response = logged_in_client.get("/api/v1/whoami")

    assert response.status_code == 200
    assert response.json() == {
        "username": "alice",
        "is_staff": False,
        "auth": "session",
        "scope": None,
    }


def test_login_page_renders_styled(client: Client) -> None:
    response = client.get("/accounts/login/")

    stylesheet = static("css/app.css")
    assert response.status_code == 200
    assert re.fullmatch(r"/static/css/app\.[0-9a-f]{12}\.css", stylesheet)  # manifest-hashed
    assert f'<link rel="stylesheet" href="{stylesheet}">' in response.text
    assert "<h1>Log in to ClusterWatch</h1>" in response.text
    assert client.get(stylesheet)["Content-Type"].startswith("text/css")


def _csrf_token(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, "login form has no CSRF token"
    return match.group(1)


def test_logging_in_lands_on_the_overview(user: object, password: str) -> None:
    browser = Client(enforce_csrf_checks=True)
    login_page = browser.get("/accounts/login/?next=/")
    form = {"username": "alice", "password": password, "next": "/"}

    response = browser.post(
        "/accounts/login/", {**form, "csrfmiddlewaretoken": _csrf_token(login_page.text)}
    )

    assert response.status_code == 302
    assert response["Location"] == "/"
    overview = browser.get("/")
    assert overview.status_code == 200
    assert "<h1>Overview</h1>" in overview.text
    assert ">Overview</a>" in overview.text


def test_logging_in_with_a_wrong_password_stays_on_the_login_page(user: object) -> None:
    client = Client()

    response = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})

    assert response.status_code == 200
    assert "Your username and password didn't match." in response.text
    assert client.get("/").status_code == 302


def _navigation(client: Client) -> list[str]:
    nav = re.search(r'<nav class="nav">(.*?)</nav>', client.get("/").text, re.DOTALL)
    assert nav, "page has no navigation"
    return re.findall(r">(\w+)</a>", nav.group(1))


def test_navigation_shows_admin_only_to_staff(
    client: Client, user: object, staff_user: object
) -> None:
    labels = [label for label, _ in NAVIGATION]
    assert labels[:6] == ["Overview", "Fabric", "Nodes", "Runs", "Queues", "Alerts"]
    assert "Admin" in labels

    client.force_login(user)
    assert _navigation(client) == [label for label in labels if label != "Admin"]

    client.force_login(staff_user)
    assert _navigation(client) == labels
