"""The Rule protocol, rule parameters and the registry of rules with their defaults.

A rule is plain Python: ``signals(data, settings)`` turns ``EvaluationData``
into one ``Signal`` per scope (a GPU, a port, a queue, a run). It never touches
the ORM; ``alerts.services`` turns signals into alert state.

Writing a rule (override points of ``BaseRule``):
- ``id``, ``family``, ``scope``, ``severity``, ``for_seconds``,
  ``keep_firing_for_seconds``, ``params``: mandatory class attributes.
- ``signals()``: mandatory.
- ``lookback()``: optional; the default covers ``for`` + ``keep_firing_for`` + the
  largest window param + two sample gaps, so the first evaluation after a restart
  sees the whole ``for`` window in the data.
- ``prefilter()`` and ``history_mark()``: optional; the mark lets a backtest over
  compacted history skip the hours with no candidate (``ingest.history.MARKS``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol

from .data import EvaluationData, Signal

SEVERITIES = ("critical", "warning", "info")


class RuleConfigError(ValueError):
    """A rule setting is invalid; the message names the rule and the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Param:
    """One editable threshold of a rule: its name, type, default and meaning."""

    name: str
    kind: type  # float, int, bool, str or list (a list of ints)
    default: Any
    help: str

    def check(self, value: Any) -> Any:
        """Return ``value`` if it has this param's type, else raise RuleConfigError."""
        if self.kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if self.kind is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if self.kind is bool and isinstance(value, bool):
            return value
        if self.kind is str and isinstance(value, str):
            return value
        if self.kind is list and isinstance(value, list):
            if all(isinstance(v, int | str) and not isinstance(v, bool) for v in value):
                return value
        expected = {float: "a number", int: "an integer", bool: "true or false", str: "a string"}
        raise RuleConfigError(
            f"params.{self.name}",
            f"expected {expected.get(self.kind, 'a list of integers or strings')}, got {value!r}",
        )


class RuleSettings(NamedTuple):
    """A rule's effective settings: its defaults overlaid with the stored ``RuleConfig``."""

    rule: str
    enabled: bool
    severity: str
    for_seconds: float
    keep_firing_for_seconds: float
    params: dict[str, Any]


class Rule(Protocol):
    """What the evaluator needs from a rule."""

    id: str
    family: str
    scope: tuple[str, ...]
    needs: tuple[str, ...]
    severity: str
    for_seconds: int
    keep_firing_for_seconds: int
    params: tuple[Param, ...]
    description: str

    def lookback(self, settings: RuleSettings, max_gap: float) -> float:
        """Seconds of data before ``as_of`` the rule needs."""
        ...

    def prefilter(self, settings: RuleSettings) -> dict[str, tuple[str, list[Any]]]:
        """Per dense dataset, an SQL predicate every true point satisfies (optional)."""
        ...

    def history_mark(self, settings: RuleSettings) -> dict[str, str]:
        """Per dense dataset, the compacted-history mark its prefilter implies (optional)."""
        ...

    def as_of(self, data: EvaluationData) -> float:
        """The data time the rule judges at."""
        ...

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterable[Signal]:
        """One signal per scope with anything to say."""
        ...


class BaseRule:
    """Defaults shared by every rule (see the module docstring for the override points)."""

    id: ClassVar[str]
    family: ClassVar[str]
    scope: ClassVar[tuple[str, ...]]
    needs: ClassVar[tuple[str, ...]] = ()  # datasets of EvaluationData the rule reads
    severity: ClassVar[str] = "warning"
    for_seconds: ClassVar[int] = 0
    keep_firing_for_seconds: ClassVar[int] = 0
    params: ClassVar[tuple[Param, ...]] = ()

    @property
    def description(self) -> str:
        """The first paragraph of the rule's docstring (shown in the admin)."""
        return (self.__doc__ or "").strip().split("\n\n")[0]

    def lookback(self, settings: RuleSettings, max_gap: float) -> float:
        """``for`` + ``keep_firing_for`` + the largest ``*window_seconds`` param + two gaps."""
        windows = [float(v) for k, v in settings.params.items() if k.endswith("window_seconds")]
        return (
            settings.for_seconds
            + settings.keep_firing_for_seconds
            + max(windows, default=0.0)
            + 2 * max_gap
        )

    def prefilter(self, settings: RuleSettings) -> dict[str, tuple[str, list[Any]]]:
        """Optional: per dense dataset, an SQL predicate every true point satisfies.

        The selectors then fetch whole series only for the GPUs / ports with a row
        matching it (a necessary condition, so results are the same; only much less
        data crosses into Python). No entry: the rule needs every series.
        """
        return {}

    def history_mark(self, settings: RuleSettings) -> dict[str, str]:
        """Optional: per dense dataset, the name of an ``ingest.history`` mark (a GPU's or
        port's hours with a step matching the mark's predicate) that ``prefilter``'s
        predicate implies: in compacted history only those hours are searched for
        candidates. No entry: every hour is (same result, slower)."""
        return {}

    def as_of(self, data: EvaluationData) -> float:
        """The data time the rule judges at: its family's ingest cursor (optional override)."""
        return data.as_of_family(self.family)

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterable[Signal]:
        """Mandatory: one signal per scope."""
        raise NotImplementedError

    def defaults(self) -> RuleSettings:
        """The rule's built-in settings (the defaults docs/domain.md and docs/alerts.md list)."""
        return RuleSettings(
            rule=self.id,
            enabled=True,
            severity=self.severity,
            for_seconds=self.for_seconds,
            keep_firing_for_seconds=self.keep_firing_for_seconds,
            params={p.name: p.default for p in self.params},
        )


REGISTRY: dict[str, BaseRule] = {}


def register(cls: type[BaseRule]) -> type[BaseRule]:
    """Class decorator: add one instance of the rule to the registry (ids are unique)."""
    if cls.id in REGISTRY:
        raise ValueError(f"duplicate rule id {cls.id!r}")
    REGISTRY[cls.id] = cls()
    return cls


def get_rule(rule_id: str) -> BaseRule:
    """The registered rule ``rule_id``; RuleConfigError naming the known ids otherwise."""
    try:
        return REGISTRY[rule_id]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise RuleConfigError("rule", f"unknown rule {rule_id!r} (known: {known})") from None


def validate_params(rule_id: str, params: Any) -> dict[str, Any]:
    """Check a params dict against the rule: unknown names and wrong types raise RuleConfigError."""
    rule = get_rule(rule_id)
    if not isinstance(params, dict):
        raise RuleConfigError("params", f"expected an object of thresholds, got {params!r}")
    by_name = {p.name: p for p in rule.params}
    checked = {}
    for name, value in params.items():
        if name not in by_name:
            raise RuleConfigError(
                f"params.{name}",
                f"unknown parameter of {rule_id} (known: {', '.join(by_name) or 'none'})",
            )
        checked[name] = by_name[name].check(value)
    return checked


def validate_config(rule_id: str, params: Any) -> dict[str, Any]:
    """Validate a stored RuleConfig's rule id and params (used by the model's ``clean``)."""
    return validate_params(rule_id, params)


def settings_for(
    rule_id: str,
    *,
    enabled: bool = True,
    severity: str | None = None,
    for_seconds: float | None = None,
    keep_firing_for_seconds: float | None = None,
    params: dict[str, Any] | None = None,
) -> RuleSettings:
    """Effective settings: the rule's defaults overlaid with the given values (validated)."""
    rule = get_rule(rule_id)
    base = rule.defaults()
    if severity is not None and severity not in SEVERITIES:
        raise RuleConfigError(
            "severity", f"expected one of {', '.join(SEVERITIES)}, got {severity!r}"
        )
    for name, value in (
        ("for_seconds", for_seconds),
        ("keep_firing_for_seconds", keep_firing_for_seconds),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or value < 0
        ):
            raise RuleConfigError(name, f"expected a number of seconds ≥ 0, got {value!r}")
    return base._replace(
        enabled=enabled,
        severity=severity or base.severity,
        for_seconds=base.for_seconds if for_seconds is None else float(for_seconds),
        keep_firing_for_seconds=(
            base.keep_firing_for_seconds
            if keep_firing_for_seconds is None
            else float(keep_firing_for_seconds)
        ),
        params={**base.params, **validate_params(rule_id, params or {})},
    )
