"""Notification delivery: grouping (pure), the outbox, and the tasks that drive them."""
