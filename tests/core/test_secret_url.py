"""A URL that is itself a secret (HEARTBEAT_URL): read through a typed helper, never shown in full."""

from __future__ import annotations

import pytest

from config import env
from core.secrets import url_shape

SECRET = "https://hc-ping.com/3f1d2c9e-5b7a-4e21-9c0d-8a6b1e2f4d7c"


def test_unset_is_empty_and_a_good_url_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEARTBEAT_URL", raising=False)
    assert env.env_secret_url("HEARTBEAT_URL") == ""
    monkeypatch.setenv("HEARTBEAT_URL", SECRET)
    assert env.env_secret_url("HEARTBEAT_URL") == SECRET


@pytest.mark.parametrize(
    "value",
    [
        "ftp://hc-ping.com/3f1d2c9e-secret",
        "https:///3f1d2c9e-secret",
        "http://h:99999/3f1d2c9e-secret",
    ],
)
def test_a_bad_url_is_an_error_that_does_not_show_it(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setattr(env, "ERRORS", [])
    monkeypatch.setenv("HEARTBEAT_URL", value)
    assert env.env_secret_url("HEARTBEAT_URL") == ""
    (error,) = env.ERRORS
    assert error.startswith("HEARTBEAT_URL=") and "3f1d2c9e" not in error


def test_url_shape_keeps_scheme_host_and_the_last_four_characters() -> None:
    assert url_shape(SECRET) == "https://hc-ping.com/…4d7c"
    assert url_shape("http://h/x") == "••••••"


def test_a_url_list_keeps_each_good_url_and_reports_each_bad_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(env, "ERRORS", [])
    monkeypatch.delenv("INGEST_PUSH_URL", raising=False)
    assert env.env_url_list("INGEST_PUSH_URL", ("http", "https")) == []
    monkeypatch.setenv("INGEST_PUSH_URL", " http://a:9201 , ,https://b:9201/ ,ftp://c:21")
    assert env.env_url_list("INGEST_PUSH_URL", ("http", "https")) == [
        "http://a:9201",
        "https://b:9201/",
    ]
    assert env.ERRORS == ["INGEST_PUSH_URL='ftp://c:21': expected a URL like http://host:port/..."]
