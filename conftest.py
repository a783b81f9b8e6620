"""Loaded before tests/conftest.py: isolate each pytest run.

Several test runs may share one Postgres and one Redis (developers, CI, a
running demo). Each run gets its own database (pytest-django creates
``test_cw_<pid>``) and a Redis database number of its own, unless the
environment already says otherwise.
"""

from __future__ import annotations

import os

os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/cw_{os.getpid()}")
os.environ.setdefault("REDIS_URL", f"redis://127.0.0.1:6379/{1 + os.getpid() % 15}")
