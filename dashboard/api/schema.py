"""OpenAPI descriptions of the dashboard's endpoints (registered from ``DashboardConfig.ready``)."""

from __future__ import annotations

from ..choices import HEATMAP_METRIC_IDS, IB_METRIC_CHOICES, HeatmapSort, Window
from .registry import ERROR_RESPONSE, json_response, query, register_path, register_schema

TIME = {"type": "string", "format": "date-time"}
NUMBERS = {"type": "array", "items": {"type": ["number", "null"]}}
RANGE_PARAMETERS = [
    query("window", "relative window ending now (default 24h)", {"enum": Window.values}),
    query("start", "custom range start (ISO 8601); needs end", TIME),
    query("end", "custom range end (ISO 8601); needs start", TIME),
    query("width", "plot width in pixels: picks the step (one column per ~3 px)",
          {"type": "integer", "minimum": 100, "maximum": 8000}),
    query("step", "explicit step in seconds (overrides width)", {"type": "integer", "minimum": 1}),
]  # fmt: skip


def _matrix(extra: dict[str, object], required: list[str]) -> dict[str, object]:
    return {"type": "object", "required": required, "properties": extra}


def register() -> None:
    """Register the dashboard's paths and schemas."""
    register_schema(
        "Heatmap",
        _matrix(
            {
                "metric": {"enum": HEATMAP_METRIC_IDS}, "unit": {"type": "string"},
                "start": TIME, "end": TIME, "step": {"type": "integer", "description": "seconds"},
                "nodes": {"type": "array", "items": {"type": "string"}},
                "times": {"type": "array", "items": TIME, "description": "column start times"},
                "values": {"type": "array", "items": NUMBERS, "description": "one list per node"},
                "marks": {"type": "object", "description": "node → {state, alerts}: firing/silenced rows"},
            },
            ["metric", "unit", "start", "end", "step", "nodes", "times", "values"],
        ),
    )  # fmt: skip
    register_schema(
        "Rails",
        _matrix(
            {"metric": {"type": "string"}, "unit": {"type": "string"}, "start": TIME, "end": TIME,
             "nodes": {"type": "array", "items": {"type": "string"}},
             "ports": {"type": "array", "items": {"type": "string"}, "description": "device:port"},
             "values": {"type": "array", "items": NUMBERS}},
            ["metric", "unit", "start", "end", "nodes", "ports", "values"],
        ),
    )  # fmt: skip
    register_schema("Overview", {"type": "object", "required": [
        "generated_at", "nodes", "alerts", "utilization", "ingest", "queues", "pools"]})  # fmt: skip
    register_schema("NodeDetail", {"type": "object", "required": [
        "node", "start", "end", "step", "gpus", "ports", "xids", "runs", "alerts"]})  # fmt: skip
    register_path("/api/v1/heatmap", "get", {
        "summary": "Per-node heatmap of one metric (rows = nodes, columns = time)",
        "parameters": [
            query("metric", "metric id (default ib_tx)", {"enum": HEATMAP_METRIC_IDS}),
            query("sort", "row order (default name)", {"enum": HeatmapSort.values}),
            *RANGE_PARAMETERS,
        ],
        "responses": {"200": json_response("the heatmap", "Heatmap"), "400": ERROR_RESPONSE},
    })  # fmt: skip
    register_path("/api/v1/rails", "get", {
        "summary": "Nodes × HCA ports for a window (one cell per port)",
        "parameters": [query("metric", "IB metric id (default ib_errors)",
                             {"enum": [metric for metric, _ in IB_METRIC_CHOICES]}), *RANGE_PARAMETERS],
        "responses": {"200": json_response("the rails matrix", "Rails"), "400": ERROR_RESPONSE},
    })  # fmt: skip
    register_path("/api/v1/overview", "get", {
        "summary": "Node states, firing alerts, reported vs real utilization, GPU-hours with idle tensor cores, "
                   "ingest health, queues, pools over the last 24 h",
        "responses": {"200": json_response("the overview", "Overview")},
    })  # fmt: skip
    register_path("/api/v1/nodes/{name}", "get", {
        "summary": "One node: per-GPU and per-port series, XIDs, runs, alerts",
        "parameters": [
            {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
            query("at", "centre a 1 h window (or the given window) on this time", TIME),
            *RANGE_PARAMETERS,
        ],
        "responses": {"200": json_response("the node", "NodeDetail"), "400": ERROR_RESPONSE,
                      "404": {"description": "no such node"}},
    })  # fmt: skip
    register_path("/api/v1/openapi.json", "get", {
        "summary": "This document", "responses": {"200": {"description": "OpenAPI 3.1"}},
    })  # fmt: skip
    register_path("/api/v1/whoami", "get", {
        "summary": "Who the API thinks you are", "responses": {"200": {"description": "the user"}},
    })  # fmt: skip
