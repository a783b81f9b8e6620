"""Alert rules: pure functions over plain data, one module per rule family.

Importing this package registers every rule in ``REGISTRY`` (in evaluation
order: derived rules such as ``ib_switch_fault`` come after their sources).
"""

from __future__ import annotations

from . import checkpoints, cluster, gpu, gpu_health, ib, ib_congestion, ib_fabric, kueue  # noqa: F401 - registers the rules
from .base import (
    REGISTRY,
    BaseRule,
    Param,
    Rule,
    RuleConfigError,
    RuleSettings,
    get_rule,
    settings_for,
    validate_config,
    validate_params,
)

__all__ = [
    "REGISTRY",
    "BaseRule",
    "Param",
    "Rule",
    "RuleConfigError",
    "RuleSettings",
    "get_rule",
    "settings_for",
    "validate_config",
    "validate_params",
]
