"""Shared helpers for integration tests (real Prometheus, simulator server)."""
