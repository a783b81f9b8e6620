"""``manage.py ensure_demo_user USERNAME``: create or reset the demo admin.

The password comes from the environment (``CLUSTERWATCH_DEMO_PASSWORD``), not the command
line: a command line is visible to every local user in ``ps``, and a generated password that
starts with ``-`` would be read as an option.
"""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

PASSWORD_VARIABLE = "CLUSTERWATCH_DEMO_PASSWORD"


class Command(BaseCommand):
    help = f"Create (or reset the password of) a staff superuser for the demo (password: ${PASSWORD_VARIABLE})."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        password = os.environ.get(PASSWORD_VARIABLE, "")
        if not password:
            raise CommandError(f"set {PASSWORD_VARIABLE} to the password")
        user, created = get_user_model().objects.get_or_create(username=options["username"])
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_password(password)
        user.save()
        self.stdout.write(f"{'created' if created else 'updated'} {user.username}")
