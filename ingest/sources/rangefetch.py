"""Shared by the kueue / cluster / runs / checkpoints sources: PromQL lookup and window fetch."""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings

from ..identity import checked
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


def labelled(
    series: list[Series], *labels: str, batch: Batch
) -> list[tuple[tuple[str, ...], Series]]:
    """Each series with the values of ``labels``, normalised by ``identity.checked`` (253
    characters, Kubernetes' own limit and the name columns' width); a series missing one is
    skipped and counted, one whose value does not fit also in ``batch.unfit`` with the reason."""
    kept = []
    for item in series:
        found = [(label, *checked(item.labels.get(label, ""))) for label in labels]
        if all(value for _label, value, _problem in found):
            kept.append((tuple(value for _label, value, _problem in found), item))
            continue
        batch.skipped += len(item.points)
        for label, value, problem in found:
            if value is None and item.labels.get(label, "").strip():
                reason = f"kube-state-metrics: {label} label {problem}"
                batch.unfit[reason] = batch.unfit.get(reason, 0) + 1
    return kept
