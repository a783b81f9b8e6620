"""API tokens and worker heartbeats."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "cw_"


def hash_token(raw: str) -> str:
    """SHA-256 of a raw token: what we store. Tokens are random, so no salt is needed."""
    return hashlib.sha256(raw.encode()).hexdigest()


class APIToken(models.Model):
    """A bearer token for scripts and training jobs; only its hash is stored."""

    class Scope(models.TextChoices):
        READ = "read", "Read"
        CHECKPOINTS = "checkpoints", "Push checkpoints"
        CREATE_RUNS = "create_runs", "Push checkpoints and create runs"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, help_text="First characters, to recognise a token.")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(max_length=20, choices=Scope.choices, default=Scope.READ)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @classmethod
    def issue(cls, user: object, name: str = "", scope: str = Scope.READ) -> tuple[APIToken, str]:
        """Create a token; the raw value is returned once and never stored."""
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user, name=name, prefix=raw[:10], token_hash=hash_token(raw), scope=scope
        )
        return token, raw

    @property
    def is_usable(self) -> bool:
        """Neither revoked nor expired."""
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    def allows(self, scope: str) -> bool:
        """Whether this token grants ``scope`` (scopes are ordered read < checkpoints < create_runs)."""
        order = [choice for choice, _ in self.Scope.choices]
        return order.index(self.scope) >= order.index(scope)


class WorkerHeartbeat(models.Model):
    """One row per Celery worker, touched by a periodic task: proof the queue is served."""

    hostname = models.CharField(max_length=200, unique=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.hostname} @ {self.seen_at:%Y-%m-%d %H:%M:%S}"
