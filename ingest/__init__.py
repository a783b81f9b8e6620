"""Prometheus → Postgres: every family, every dialect, exactly once."""
