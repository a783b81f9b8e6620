"""``manage.py ensure_demo_user USERNAME PASSWORD``: create or reset the demo admin."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Create (or reset the password of) a staff superuser for the demo."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("password")

    def handle(self, *args: Any, **options: Any) -> None:
        user, created = get_user_model().objects.get_or_create(username=options["username"])
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_password(options["password"])
        user.save()
        self.stdout.write(f"{'created' if created else 'updated'} {user.username}")
