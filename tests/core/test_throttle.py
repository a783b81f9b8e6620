"""Login throttling (per username, per address; no hashing once locked) and the API token rate."""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.core.cache import cache
from django.test import Client
from django.test.utils import override_settings
from prometheus_client import generate_latest

from core import throttle
from core.metrics import REGISTRY
from core.models import APIToken

pytestmark = pytest.mark.django_db
T0 = 1_780_000_000.0
LOCKED = "Too many failed login attempts. Try again in"
WRONG = {"/accounts/login/": "Your username and password didn't match. Please try again.",
         "/admin/login/": "Please enter the correct username and password for a staff account."}  # fmt: skip


@pytest.fixture
def clock() -> Iterator[list[float]]:
    """The throttle's clock, pinned (``clock[0] += 61`` moves it)."""
    cache.clear()
    moment = [T0]
    with mock.patch.object(throttle, "now", lambda: moment[0]):
        yield moment
    cache.clear()


@pytest.fixture
def hashing() -> Iterator[mock.MagicMock]:
    """Counts PBKDF2 computations: ``verify`` runs one ``encode``, as does the dummy hash
    Django computes for an unknown username."""
    encode = PBKDF2PasswordHasher.encode
    calls = mock.MagicMock()

    def counted_encode(self: PBKDF2PasswordHasher, *args: object, **kwargs: object) -> str:
        calls()
        return encode(self, *args, **kwargs)

    with mock.patch.object(PBKDF2PasswordHasher, "encode", counted_encode):
        yield calls


def login(client: Client, path: str, username: str, password: str) -> str:
    response = client.post(path, {"username": username, "password": password})
    return "ok" if response.status_code == 302 else response.content.decode()


def metric(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
    return value or 0.0


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_the_sixth_wrong_password_is_refused_without_hashing(
    client: Client, staff_user: object, password: str, clock: list[float], hashing: mock.MagicMock,
    path: str,
) -> None:  # fmt: skip
    before = metric("clusterwatch_login_throttled_total", scope="username")
    for attempt in range(5):
        clock[0] = T0 + attempt
        assert WRONG[path] in login(client, path, "root", "x")
    assert hashing.call_count == 5
    clock[0] = T0 + 10
    sixth = login(client, path, "root", "wrong")
    assert f"{LOCKED} 50 seconds." in sixth
    assert hashing.call_count == 5  # refused before any hashing
    # Locked means locked: the right password is refused too, still without hashing.
    assert f"{LOCKED} 50 seconds." in login(client, path, "ROOT", password)
    assert hashing.call_count == 5
    assert metric("clusterwatch_login_throttled_total", scope="username") == before + 2
    assert b"clusterwatch_login_throttled_total" in generate_latest(REGISTRY)
    # Past the window (60 s after the first failure), the right password works.
    clock[0] = T0 + 60.5
    assert login(client, path, "root", password) == "ok"


def test_many_usernames_from_one_address_lock_the_address(
    client: Client, clock: list[float], hashing: mock.MagicMock
) -> None:
    with override_settings(LOGIN_MAX_FAILURES_PER_IP=3):
        for name in ("a", "b", "c"):
            assert LOCKED not in login(client, "/accounts/login/", name, "x")
        assert f"{LOCKED} 60 seconds." in login(client, "/accounts/login/", "d", "x")
    assert hashing.call_count == 3


def test_an_api_token_past_its_rate_gets_429_with_retry_after(
    client: Client, user: object, clock: list[float]
) -> None:
    _, raw = APIToken.issue(user)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    clock[0] = 60 * 29_666_666 + 45.0  # 45 s into a clock minute
    with override_settings(API_TOKEN_RATE_PER_MINUTE=3):
        codes = [client.get("/api/v1/whoami", **headers).status_code for _ in range(4)]
        refused = client.get("/api/v1/whoami", **headers)
        assert codes == [200, 200, 200, 429]
        assert (refused.status_code, refused["Retry-After"], refused.json()) == (
            429,
            "15",
            {"error": "too_many_requests", "detail": "token rate exceeded; retry in 15 s"},
        )
        clock[0] += 15
        assert client.get("/api/v1/whoami", **headers).status_code == 200
