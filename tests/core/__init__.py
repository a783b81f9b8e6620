"""Tests for the foundation: auth, health, metrics, Celery, websockets, config."""
