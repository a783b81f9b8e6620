"""Query-string forms of the runs and queues pages and endpoints."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import forms
from django.db import models

from core import clock
from runs.selectors import JobState


class RunWindow(models.TextChoices):
    """How far back the runs and queues pages look."""

    H6 = "6h", "6 hours"
    H24 = "24h", "24 hours"
    D7 = "7d", "7 days"
    D30 = "30d", "30 days"


WINDOW_SPANS = {
    RunWindow.H6: timedelta(hours=6),
    RunWindow.H24: timedelta(hours=24),
    RunWindow.D7: timedelta(days=7),
    RunWindow.D30: timedelta(days=30),
}


class WindowForm(forms.Form):
    """A relative window ending now."""

    window = forms.ChoiceField(choices=RunWindow.choices, required=False)
    default_window = RunWindow.D7

    def span(self, now: datetime | None = None) -> tuple[datetime, datetime]:
        """(start, end) of the validated window (call after ``is_valid()``)."""
        end = now or clock.now()
        window = self.cleaned_data.get("window") or self.default_window
        return end - WINDOW_SPANS[RunWindow(window)], end


class RunFilterForm(WindowForm):
    """Runs list filters: queue (Local or ClusterQueue), state, node, window."""

    queue = forms.CharField(required=False, max_length=253)
    state = forms.ChoiceField(choices=[("", "any"), *JobState.choices], required=False)
    node = forms.CharField(required=False, max_length=253)


class QueuesForm(WindowForm):
    """The queues page looks at the last day by default."""

    default_window = RunWindow.H24


def first_error(form: forms.Form) -> tuple[str, str]:
    """(parameter, message) of a form's first error, for 400 answers."""
    field, errors = next(iter(form.errors.items()))
    return field, str(errors[0])
