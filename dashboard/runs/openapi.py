"""OpenAPI descriptions of the runs, queues and checkpoint-push endpoints (registered on import)."""

from __future__ import annotations

from ..api.registry import json_response, query, register_path, register_schema

WINDOW = query("window", "How far back: 6h, 24h, 7d or 30d", {"enum": ["6h", "24h", "7d", "30d"]})
RUN_PARAMETERS = [
    {"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}},
    {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
]
NUMBER = {"type": ["number", "null"]}
GOODPUT = {"ettr": NUMBER, "lost_seconds": NUMBER, "wall_seconds": NUMBER, "productive_seconds": NUMBER,
           "lost": {"type": "object", "properties": {k: NUMBER for k in
                    ("redo_seconds", "restart_seconds", "checkpoint_seconds")}}}  # fmt: skip


def register() -> None:
    """Add the schemas and paths; idempotent."""
    register_schema("RunSummary", {"type": "object", "properties": {
        "namespace": {"type": "string"}, "name": {"type": "string"}, "url": {"type": "string"},
        "local_queue": {"type": "string"}, "cluster_queue": {"type": ["string", "null"]},
        "state": {"enum": ["pending", "running", "succeeded", "failed", "unknown"]},
        "start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"},
        "gpus": {"type": "integer"}, "nodes": {"type": "array", "items": {"type": "string"}},
        "restarts": {"type": "integer"}, "evictions": {"type": "integer"}, "checkpoints": {"type": "integer"},
        **GOODPUT}})  # fmt: skip
    register_schema("RunList", {"type": "object", "properties": {
        "count": {"type": "integer"}, "runs": {"type": "array", "items": {"$ref": "#/components/schemas/RunSummary"}}}})  # fmt: skip
    register_schema("Checkpoint", {"type": "object", "properties": {
        "step": {"type": "integer"}, "time": {"type": "string", "format": "date-time"},
        "duration_seconds": NUMBER, "bytes": {"type": ["integer", "null"]}, "path": {"type": "string"},
        "source": {"enum": ["prometheus", "api"]}}})  # fmt: skip
    register_schema("RunDetail", {"allOf": [{"$ref": "#/components/schemas/RunSummary"}, {"type": "object",
        "properties": {"checkpoints": {"type": "array", "items": {"$ref": "#/components/schemas/Checkpoint"}},
                       "crashes": {"type": "array", "items": {"type": "object"}},
                       "events": {"type": "array", "items": {"type": "object"}},
                       "advisor": {"type": "object"}}}]})  # fmt: skip
    register_schema("Queues", {"type": "object", "properties": {
        "queues": {"type": "array", "items": {"type": "object"}}, "runs": {"type": "array"},
        "goodput": {"type": "array", "items": {"type": "object"}}}})  # fmt: skip
    register_schema("CheckpointPush", {"type": "object", "additionalProperties": False, "required": ["step"],
        "properties": {"step": {"type": "integer", "minimum": 0}, "time": {"type": "string", "format": "date-time"},
                       "duration_seconds": {"type": "number", "minimum": 0}, "bytes": {"type": "integer", "minimum": 0},
                       "path": {"type": "string", "maxLength": 1000}}})  # fmt: skip
    register_path("/api/v1/runs", "get", {
        "summary": "Runs (jobs) with queue, state, size, restarts, evictions and ETTR",
        "parameters": [WINDOW, query("queue", "LocalQueue or ClusterQueue", {"type": "string"}),
                       query("state", "Run state", {"type": "string"}),
                       query("node", "Runs that held this node", {"type": "string"})],
        "responses": {"200": json_response("Runs, newest first", "RunList")}})  # fmt: skip
    register_path("/api/v1/runs/{namespace}/{name}", "get", {
        "summary": "One run: checkpoints, crashes with lost work, ETTR, lost_seconds, advisor figures",
        "parameters": RUN_PARAMETERS,
        "responses": {"200": json_response("The run", "RunDetail"), "404": {"description": "Unknown run"}}})  # fmt: skip
    register_path("/api/v1/runs/{namespace}/{name}/checkpoints", "post", {
        "summary": "Push a checkpoint (idempotent per step); needs a token with the 'checkpoints' scope",
        "parameters": RUN_PARAMETERS,
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/CheckpointPush"}}}},
        "responses": {"201": {"description": "Created"}, "200": {"description": "Step already recorded"},
                      "400": {"description": "Bad payload: `field` names it"},
                      "403": {"description": "Token lacks the 'checkpoints' scope"},
                      "404": {"description": "Unknown run and the token may not create runs"}}})  # fmt: skip
    register_path("/api/v1/queues", "get", {
        "summary": "ClusterQueues over time, their runs and goodput per queue per day",
        "parameters": [WINDOW],
        "responses": {"200": json_response("Queues", "Queues")}})  # fmt: skip
