"""``manage.py create_api_token`` (a new token printed once, stored only as its hash) and ``ensure_demo_user``."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from core.models import TOKEN_PREFIX, APIToken, hash_token

pytestmark = pytest.mark.django_db


def _create_api_token(*args: str) -> str:
    out = io.StringIO()
    call_command("create_api_token", *args, stdout=out)
    return out.getvalue()


def test_create_api_token_prints_one_token_that_authenticates(client: Client, user: object) -> None:
    printed = _create_api_token("alice")

    raw = printed.strip()
    assert printed == raw + "\n"
    assert raw.startswith(TOKEN_PREFIX)
    response = client.get("/api/v1/whoami", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 200
    assert response.json()["username"] == "alice"


def test_create_api_token_stores_only_the_hash(user: object) -> None:
    raw = _create_api_token("alice", "--name", "training-job", "--scope", "checkpoints").strip()

    token = APIToken.objects.get()
    assert token.token_hash == hash_token(raw)
    assert token.prefix == raw[:10]
    assert (token.name, token.scope, token.user) == ("training-job", "checkpoints", user)
    stored = [str(value) for value in APIToken.objects.values_list().get()]
    assert raw not in stored


def test_create_api_token_prints_a_new_token_each_time(user: object) -> None:
    first, second = _create_api_token("alice"), _create_api_token("alice")

    assert first != second
    assert APIToken.objects.filter(user=user).count() == 2


def test_create_api_token_for_an_unknown_user_fails() -> None:
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        _create_api_token("nobody")

    assert APIToken.objects.count() == 0


def test_ensure_demo_user_takes_the_password_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A generated password may start with "-" (here it once began "-h": the demo failed)."""
    from django.contrib.auth import get_user_model

    monkeypatch.setenv("CLUSTERWATCH_DEMO_PASSWORD", "-hPteDyDErddrnkR")
    out = io.StringIO()
    call_command("ensure_demo_user", "admin", stdout=out)
    call_command("ensure_demo_user", "admin", stdout=out)
    assert out.getvalue() == "created admin\nupdated admin\n"
    admin = get_user_model().objects.get(username="admin")
    assert (admin.is_staff, admin.is_superuser) == (True, True)
    assert admin.check_password("-hPteDyDErddrnkR")
    monkeypatch.delenv("CLUSTERWATCH_DEMO_PASSWORD")
    with pytest.raises(CommandError, match="set CLUSTERWATCH_DEMO_PASSWORD"):
        call_command("ensure_demo_user", "admin")
