"""Label matchers (=, !=, =~, !~) with Alertmanager's semantics, in linear time.

Regexes are RE2 (``google-re2``), the engine Alertmanager's Go ``regexp`` implements:
no backtracking, so ``([a-z0-9-]+)+-canary`` against any run name costs time
linear in the name. They are anchored as Alertmanager anchors them,
``^(?:<value>)$`` (prometheus/alertmanager ``pkg/labels/matcher.go``, ``NewMatcher``),
and RE2's ``$`` matches only at the very end (a trailing newline is not skipped).
A matcher on a label the alert lacks compares against the empty string. Pure: no ORM.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import re2

MATCH_OPS = ("=", "!=", "=~", "!~")
#: Bounds on one matcher list (silences and channels).
MAX_MATCHERS = 64
MAX_NAME_CHARS = 128
MAX_VALUE_CHARS = 1024
#: RE2's memory budget for one compiled regex; a pattern needing more is refused.
REGEX_MAX_MEM = 8 << 20


class MatcherError(ValueError):
    """A pattern RE2 refuses (or a matcher out of bounds); the message says why."""


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = REGEX_MAX_MEM
    return options


@lru_cache(maxsize=4096)
def compile_regex(value: str) -> Any:
    """The anchored RE2 program for ``value``; ``MatcherError`` with RE2's reason if refused."""
    try:
        # The bare value must compile on its own: ``a)|(b`` would otherwise escape the anchors.
        re2.compile(value, _options())
        return re2.compile(f"^(?:{value})$", _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise MatcherError(f"invalid regular expression (RE2 syntax): {reason}") from None


@dataclass(frozen=True)
class Matcher:
    """One label matcher: ``name op value``."""

    name: str
    op: Literal["=", "!=", "=~", "!~"]
    value: str

    def matches_value(self, actual: str) -> bool:
        """Whether one label value satisfies this matcher."""
        if self.op in ("=", "!="):
            return (actual == self.value) == (self.op == "=")
        hit = compile_regex(self.value).search(actual) is not None
        return hit == (self.op == "=~")

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this matcher (a missing label is the empty string)."""
        return self.matches_value(str(labels.get(self.name, "")))

    @property
    def matches_empty(self) -> bool:
        """Whether an alert without this label passes (Alertmanager's "matches everything" test)."""
        return self.matches_value("")


def matches_everything(matchers: list[Matcher]) -> bool:
    """Every matcher passes the empty string: the list silences any alert lacking its labels.

    Alertmanager refuses such silences ("at least one matcher must not match the
    empty string", ``silence/silence.go``); ``node=~".*"``, only ``!=`` matchers and
    ``nosuchlabel=""`` are all of this kind.
    """
    return all(matcher.matches_empty for matcher in matchers)


def describe_matchers(raw: Any) -> str:
    """``{node="gpu-001", alertname=~"ib_.*"}``, for lists and the admin (stored JSON as it is)."""
    if not isinstance(raw, list):
        return "{}"
    parts = [
        f'{m.get("name")}{m.get("op", "=")}"{m.get("value")}"' for m in raw if isinstance(m, dict)
    ]
    return "{" + ", ".join(parts) + "}"
