"""core.redis_pool: Django's cache uses one Redis connection pool per process.

Under ASGI every request context gets its own cache backend instance; without the shared
pool each opened its own Redis connection.
"""

from __future__ import annotations

import threading
import uuid

from django.conf import settings
from django.core.cache import caches

from core.redis_pool import SharedConnectionPool


def test_one_pool_per_url_and_options() -> None:
    url = settings.REDIS_URL
    first = SharedConnectionPool.from_url(url, socket_timeout=2)
    assert SharedConnectionPool.from_url(url, socket_timeout=2) is first
    assert SharedConnectionPool.from_url(url, socket_timeout=3) is not first


def test_cache_backends_in_other_threads_share_the_pool_and_work() -> None:
    key = f"pool-test-{uuid.uuid4().hex}"
    found: list[tuple[object, object, object]] = []

    def use() -> None:
        backend = caches["default"]  # a new backend instance in each thread
        backend.set(key, threading.get_ident(), 30)
        pool = backend._cache._get_connection_pool(write=True)
        found.append((backend, pool, backend.get(key)))

    threads = [threading.Thread(target=use) for _ in range(4)]
    for thread in threads:
        thread.start()
        thread.join()
    backends, pools, values = zip(*found, strict=True)
    assert len(found) == 4
    assert len({id(b) for b in backends}) == 4
    assert len({id(p) for p in pools}) == 1
    assert type(pools[0]) is SharedConnectionPool
    assert values == tuple(t.ident for t in threads)
    caches["default"].delete(key)
