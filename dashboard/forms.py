"""Query-string forms: every page and endpoint validates its parameters here."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django import forms

from core import clock
from core.validation import InputError, check_time

from .choices import (
    DEFAULT_HEATMAP_METRIC,
    DEFAULT_RAILS_METRIC,
    HEATMAP_METRIC_CHOICES,
    IB_METRIC_CHOICES,
    MAX_COLUMNS,
    MAX_SPAN,
    NICE_STEPS,
    PIXELS_PER_COLUMN,
    WINDOW_SPANS,
    HeatmapSort,
    Window,
)


@dataclass(frozen=True)
class TimeRange:
    """A resolved [start, end) range and the step its charts use."""

    start: datetime
    end: datetime
    step: int

    @property
    def span(self) -> timedelta:
        return self.end - self.start


def step_for(span: timedelta, width: int) -> int:
    """The smallest nice step giving at most one column per ``PIXELS_PER_COLUMN`` pixels."""
    columns = max(width // PIXELS_PER_COLUMN, 1)
    wanted = span.total_seconds() / columns
    return next((step for step in NICE_STEPS if step >= wanted), NICE_STEPS[-1])


def capped_step(span: timedelta, step: int) -> int:
    """``step`` raised so that ``span`` has at most ``MAX_COLUMNS`` columns (``step=1`` on 12 h)."""
    return max(step, math.ceil(span.total_seconds() / MAX_COLUMNS))


def bounded_time(form: forms.Form, name: str) -> datetime | None:
    """A cleaned date-time within the data range (2000-01-01 .. now + 1 day), else a form error."""
    moment = form.cleaned_data.get(name)
    if moment is None:
        return None
    try:
        return check_time(moment, name)
    except InputError as exc:
        raise forms.ValidationError(exc.detail) from None


def align_up(moment: datetime, step: int) -> datetime:
    """``moment`` rounded up to a multiple of ``step`` seconds since the epoch (stable columns)."""
    seconds = math.ceil(moment.timestamp() / step) * step
    return datetime.fromtimestamp(seconds, tz=UTC)


class RangeForm(forms.Form):
    """A window (1h/6h/24h/7d) or a custom start/end, plus the plot width for the resolution."""

    window = forms.ChoiceField(choices=Window.choices, required=False)
    start = forms.DateTimeField(required=False)
    end = forms.DateTimeField(required=False)
    width = forms.IntegerField(required=False, min_value=100, max_value=8000)
    step = forms.IntegerField(required=False, min_value=1, max_value=86400)
    default_window = "24h"

    def clean_start(self) -> datetime | None:
        return bounded_time(self, "start")

    def clean_end(self) -> datetime | None:
        return bounded_time(self, "end")

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        start, end = data.get("start"), data.get("end")
        if (start is None) != (end is None) and not self.errors:
            missing = "end" if end is None else "start"
            self.add_error(
                missing, f"{missing} is required when {'start' if end is None else 'end'} is given"
            )
        elif start is not None and end is not None:
            if end <= start:
                self.add_error("end", "end must be after start")
            elif end - start > MAX_SPAN:
                self.add_error("start", f"range longer than {MAX_SPAN.days} days")
            elif data.get("window"):
                self.add_error("window", "give either window or start/end, not both")
        return data

    def time_range(self) -> TimeRange:
        """The validated range (call after ``is_valid()``)."""
        data = self.cleaned_data
        width = data.get("width") or 1200
        if data.get("start") is not None:
            start, end = data["start"], data["end"]
            step = capped_step(end - start, data.get("step") or step_for(end - start, width))
            return TimeRange(start, end, step)
        span = WINDOW_SPANS[data.get("window") or self.default_window]
        step = capped_step(span, data.get("step") or step_for(span, width))
        end = align_up(clock.now(), step)
        return TimeRange(end - span, end, step)


class HeatmapForm(RangeForm):
    """``/api/v1/heatmap`` and ``/fabric/``: metric, range, row order."""

    metric = forms.ChoiceField(choices=HEATMAP_METRIC_CHOICES, required=False)
    sort = forms.ChoiceField(choices=HeatmapSort.choices, required=False)

    def clean_metric(self) -> str:
        return self.cleaned_data.get("metric") or DEFAULT_HEATMAP_METRIC

    def clean_sort(self) -> str:
        return self.cleaned_data.get("sort") or HeatmapSort.NAME


class RailsForm(RangeForm):
    """``/api/v1/rails``: nodes × HCA ports for a window."""

    metric = forms.ChoiceField(choices=IB_METRIC_CHOICES, required=False)

    def clean_metric(self) -> str:
        return self.cleaned_data.get("metric") or DEFAULT_RAILS_METRIC


class NodeForm(RangeForm):
    """Node detail: a window, optionally centred on ``at`` (a click on the heatmap)."""

    at = forms.DateTimeField(required=False)
    default_window = "6h"

    def clean_at(self) -> datetime | None:
        return bounded_time(self, "at")

    def time_range(self) -> TimeRange:
        at = self.cleaned_data.get("at")
        if at is None or self.cleaned_data.get("start") is not None:
            return super().time_range()
        span = WINDOW_SPANS[self.cleaned_data.get("window") or "1h"]
        width = self.cleaned_data.get("width") or 1200
        start = at - span / 2
        step = capped_step(span, self.cleaned_data.get("step") or step_for(span, width))
        return TimeRange(start, start + span, step)


class AlertFilterForm(forms.Form):
    """Alerts page filters: state, severity, rule, team / namespace / pool labels, free-text
    node/rule search, and the page number."""

    state = forms.CharField(required=False, max_length=32)
    severity = forms.CharField(required=False, max_length=32)
    rule = forms.CharField(required=False, max_length=64)
    team = forms.CharField(required=False, max_length=128)
    namespace = forms.CharField(required=False, max_length=253)
    pool = forms.CharField(required=False, max_length=253)
    q = forms.CharField(required=False, max_length=253)
    page = forms.IntegerField(required=False, min_value=1, max_value=10**6)

    def query_without_page(self) -> str:
        """The filters as a query string, for the pager's links."""
        from urllib.parse import urlencode

        values = self.cleaned_data if self.is_valid() else {}
        return urlencode({k: v for k, v in values.items() if v and k != "page"})


class TriageForm(forms.Form):
    """Acknowledge, un-acknowledge or assign an alert from the alerts pages."""

    action = forms.ChoiceField(choices=[("ack", "ack"), ("unack", "unack"), ("assign", "assign")])
    comment = forms.CharField(required=False, max_length=2000)
    until = forms.DateTimeField(required=False)
    assignee = forms.CharField(required=False, max_length=150)
    next = forms.CharField(required=False, max_length=2000)


def first_error(form: forms.Form) -> tuple[str, str]:
    """(parameter, message) of a form's first error, for 400 answers."""
    field, errors = next(iter(form.errors.items()))
    return field, str(errors[0])
