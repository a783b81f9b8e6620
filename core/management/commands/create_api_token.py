"""``manage.py create_api_token USERNAME``: print a new token once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.models import APIToken


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print it (it is shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for.")
        parser.add_argument(
            "--scope", default=APIToken.Scope.READ, choices=[c for c, _ in APIToken.Scope.choices]
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        _, raw = APIToken.issue(user, name=options["name"], scope=options["scope"])
        self.stdout.write(raw)
