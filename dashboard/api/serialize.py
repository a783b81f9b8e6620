"""Plain-JSON shapes of the dashboard's read results (what the endpoints answer)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import orjson
from django.http import HttpResponse, JsonResponse

from ingest.selectors import HeatmapRows

from .. import alerting
from ..rounding import compact_all
from ..summaries import Utilization


def iso(moment: datetime | None) -> str | None:
    """UTC ISO-8601 with a ``Z``, seconds precision (what the browser and tests compare)."""
    if moment is None:
        return None
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def bad_request(parameter: str, detail: str) -> JsonResponse:
    """400 naming the parameter at fault (``field``, as every API 400; ``parameter`` kept)."""
    body = {"error": "bad_request", "field": parameter, "parameter": parameter, "detail": detail}
    return JsonResponse(body, status=400)


def dumps(body: dict[str, Any]) -> str:
    """Compact JSON (no spaces: the heatmap is the largest payload we send)."""
    return json.dumps(body, separators=(",", ":"))


def orjson_response(body: dict[str, Any]) -> HttpResponse:
    """JSON of plain data (strings, numbers, None; ISO times already) encoded by orjson: the
    node endpoint's ~9,000 floats took the standard encoder ~10 ms."""
    return HttpResponse(orjson.dumps(body), content_type="application/json")


def fast_json(body: dict[str, Any]) -> HttpResponse:
    """A compact JSON response."""
    return HttpResponse(dumps(body), content_type="application/json")


def with_marks(heatmap_json: bytes, marks: dict[str, dict[str, Any]]) -> HttpResponse:
    """A serialized heatmap (UTF-8, maybe cached) plus the current row marks of its nodes.

    Marks change with alerts, not with ingest, so they are added after the cache. Bytes
    and one join: a 24 h IB heatmap is ~2 MB, and every str slice or ``+`` copied it again.
    """
    names = heatmap_json[heatmap_json.index(b'"nodes":') + 8 : heatmap_json.index(b',"times":')]
    nodes = set(json.loads(names))
    present = {name: mark for name, mark in marks.items() if name in nodes}
    tail = b',"marks":' + dumps(present).encode() + b"}"
    body = b"".join((memoryview(heatmap_json)[:-1], tail))
    return HttpResponse(body, content_type="application/json")


def _matrix(values: list[list[float | None]]) -> list[list[float | None]]:
    # ``rounding.compact`` inlined (``compact_all``): this runs for every cell of the rails matrix.
    return [compact_all(row) for row in values]


def heatmap_json(result: HeatmapRows, start: datetime, end: datetime) -> bytes:
    """The heatmap body as UTF-8 JSON: metric, unit, start, end, step, nodes, times, values.

    The values are Postgres's JSON rows (``selectors.heatmap_rows``) joined as they are:
    147 k cells at 512 nodes × 24 h, never turned into floats and back into text.
    """
    head = dumps(
        {
            "metric": result.metric,
            "unit": result.unit,
            "start": iso(start),
            "end": iso(end),
            "step": result.step,
            "nodes": list(result.nodes),
            "times": [iso(t) for t in result.times],
        }
    )
    return f'{head[:-1]},"values":[{",".join(result.rows)}]}}'.encode()


def rails(result: Any, start: datetime, end: datetime) -> dict[str, Any]:
    """The rails body: nodes × HCA ports (rails) aggregated over the window."""
    return {
        "metric": result.metric,
        "unit": result.unit,
        "start": iso(start),
        "end": iso(end),
        "nodes": list(result.nodes),
        "ports": list(result.rails),
        "values": _matrix(result.values),
    }


def utilization(result: Utilization) -> dict[str, Any]:
    """Reported vs real utilization series and GPU-hours with idle tensor cores."""
    return {
        "start": iso(result.start),
        "end": iso(result.end),
        "step": result.step,
        "times": [iso(t) for t in result.times],
        "series": {name: {"util": u, "tensor": t} for name, (u, t) in result.series.items()},
        "idle_tensor_gpu_hours": result.idle_tensor_gpu_hours,
    }


def plain(row: dict[str, Any]) -> dict[str, Any]:
    """A flat row (alert, run, ingest family, queue) with datetimes as ISO strings."""
    return {key: iso(value) if isinstance(value, datetime) else value for key, value in row.items()}


alert = plain


def alerts_block(firing: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Counts per state and the firing alerts (``firing`` if given)."""
    firing = alerting.firing() if firing is None else firing
    return {
        "counts": alerting.counts(),
        "firing": [alert(a) for a in firing[:50]],
    }


def series_block(series: dict[str, dict[str, list]]) -> dict[str, dict[str, list]]:
    """Per-device columns with ISO times (converted once when devices share one times list)."""
    converted: dict[int, list[str | None]] = {}

    def times(values: list) -> list[str | None]:
        if id(values) not in converted:
            converted[id(values)] = [iso(t) for t in values]
        return converted[id(values)]

    return {
        device: {
            key: times(values) if key == "times" else values for key, values in columns.items()
        }
        for device, columns in series.items()
    }
