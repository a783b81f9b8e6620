"""One Redis connection pool per process for Django's cache.

Django keeps a cache backend per request context under ASGI (``CacheHandler`` is an
asgiref ``Local``), and its Redis backend builds a new ``ConnectionPool`` for every
backend instance. Every page view therefore opened a new TCP connection to Redis
(and redis-py 8 looks up its own version with ``importlib.metadata`` for the
connection's ``CLIENT SETINFO``): about 7 % of a web worker's CPU on the overview's
JSON, measured with py-spy. ``SharedConnectionPool`` is the cache's ``pool_class``
(settings.CACHES): ``from_url`` hands every backend instance the same pool for the same
URL and options. redis-py's pools are thread-safe and reset themselves in a forked
child (they compare the PID), so Celery's prefork workers get their own.
"""

from __future__ import annotations

import threading
from typing import Any

import redis

_POOLS: dict[tuple[str, str], redis.ConnectionPool] = {}
_LOCK = threading.Lock()


class SharedConnectionPool(redis.ConnectionPool):
    """A ``ConnectionPool`` whose ``from_url`` returns one pool per (URL, options) per process."""

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> redis.ConnectionPool:  # type: ignore[override]
        key = (url, repr(sorted(kwargs.items())))
        with _LOCK:
            pool = _POOLS.get(key)
            if pool is None:
                pool = _POOLS[key] = super().from_url(url, **kwargs)
        return pool
