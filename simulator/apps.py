from __future__ import annotations

from django.apps import AppConfig


class SimulatorConfig(AppConfig):
    """The cluster simulator (management command ``simulate``)."""

    name = "simulator"
