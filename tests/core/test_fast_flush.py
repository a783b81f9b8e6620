"""The transactional tests' teardown (DELETE, not Django's TRUNCATE flush) leaves what flush leaves."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from tests.support.timeseries import (
    KEPT_BY_FLUSH,
    delete_committed_rows,
    non_deferrable_foreign_keys,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_no_foreign_key_makes_the_delete_order_matter() -> None:
    assert non_deferrable_foreign_keys(connection) == []


def test_committed_rows_are_deleted_and_content_types_and_permissions_kept() -> None:
    user = User.objects.create_user("flushed", password="x")
    user.user_permissions.add(Permission.objects.get(codename="view_user"))
    kept = (ContentType.objects.count(), Permission.objects.count())
    delete_committed_rows(connection)
    assert (User.objects.count(), User.user_permissions.through.objects.count()) == (0, 0)
    assert (ContentType.objects.count(), Permission.objects.count()) == kept
    assert kept[0] > 0 and kept[1] > 0
    assert KEPT_BY_FLUSH == {"django_migrations", "django_content_type", "auth_permission"}


def test_the_rule_configs_the_migrations_seeded_are_put_back_as_they_were() -> None:
    from alerts.models import RuleConfig

    def configs() -> list[tuple]:
        return sorted(RuleConfig.objects.values_list())

    seeded = configs()
    RuleConfig.objects.filter(pk=RuleConfig.objects.order_by("pk")[0].pk).delete()
    RuleConfig.objects.update(enabled=False)
    assert configs() != seeded
    delete_committed_rows(connection)
    assert (configs(), len(seeded)) == (seeded, 13)
