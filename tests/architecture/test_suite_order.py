"""The slow-first schedule of ``make test`` names modules that exist (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SLOW_FIRST

ROOT = Path(__file__).resolve().parents[2]


def test_every_slow_first_module_exists_once() -> None:
    missing = [module for module in SLOW_FIRST if not (ROOT / module).is_file()]
    assert (missing, len(set(SLOW_FIRST))) == ([], len(SLOW_FIRST))
