"""Shared by the kueue / cluster / runs / checkpoints sources: PromQL lookup and window fetch."""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings

from ..prometheus import PrometheusClient, Series
from .base import Batch, Window

DIALECT = "default"


def promql(family: str, table: Mapping[str, Mapping[str, str]], name: str) -> str:
    """The family's query ``name``, or its ``INGEST_PROMQL_OVERRIDES["family.default.name"]``."""
    overrides: Mapping[str, str] = getattr(settings, "INGEST_PROMQL_OVERRIDES", {}) or {}
    return overrides.get(f"{family}.{DIALECT}.{name}", table[DIALECT][name])


def fetch(client: PrometheusClient, query: str, window: Window, batch: Batch) -> list[Series]:
    """Range-query ``[start, end]``: the point at ``start`` is the baseline, not a new step.

    Points Prometheus answered with NaN/±Inf are counted into ``batch.skipped``.
    """
    answer = client.query_range(query, window.start, window.end, window.step)
    batch.skipped += answer.skipped
    return answer.series


MAX_NAME = 253


def clip(value: str) -> str:
    """A label value cut to what the name columns hold (253, Kubernetes' own limit)."""
    return value[:MAX_NAME]


def labelled(
    series: list[Series], *labels: str, batch: Batch
) -> list[tuple[tuple[str, ...], Series]]:
    """Each series with the values of ``labels``; series missing one are skipped and counted."""
    kept = []
    for item in series:
        values = tuple(clip(item.labels.get(label, "")) for label in labels)
        if all(values):
            kept.append((values, item))
        else:
            batch.skipped += len(item.points)
    return kept
