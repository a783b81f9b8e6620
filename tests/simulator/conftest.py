"""The simulator suite's fixtures (tests/conftest.py may import the same ones project-wide)."""

from tests.support.fixtures import scenario_prometheus  # noqa: F401
