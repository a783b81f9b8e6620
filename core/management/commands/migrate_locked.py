"""``manage.py migrate_locked``: ``migrate`` under a Postgres advisory lock.

Every web pod of the Kubernetes manifests migrates in an init container before it
serves (deploy/entrypoint.sh ``migrate``). Pods that start together would run the
same migrations at once; under the lock they take turns, and the later ones find
nothing left to apply. The lock is a session lock: a pod that dies mid-migration
releases it with its connection.
"""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection

#: Arbitrary, stable key of the migration advisory lock (beside ingest.partitions.PARTITION_LOCK_KEY).
MIGRATE_LOCK_KEY = 0x1C57_0002


class Command(BaseCommand):
    help = "Apply migrations, one process at a time (a Postgres advisory lock)."

    def handle(self, *args: Any, **options: Any) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
        try:
            call_command("migrate", interactive=False, verbosity=options["verbosity"])
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK_KEY])
