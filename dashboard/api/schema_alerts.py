"""OpenAPI descriptions of the alerts, silences and coverage endpoints (``alerts`` and ``ingest``
serve them; the dashboard owns the document, so they are described here, from its ``ready``)."""

from __future__ import annotations

from typing import Any

from .registry import json_response, query, register_path, register_schema

TIME = {"type": "string", "format": "date-time"}
NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}
FIELD_ERROR = {
    "description": "Bad input: names the field; nothing was changed",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FieldError"}}},
}
FORBIDDEN = {"description": "Authenticated, but without the model permission (or token scope)"}
NOT_FOUND = {"description": "No such silence (JSON error)"}
MATCHER = {
    "type": "object",
    "required": ["name", "op", "value"],
    "properties": {
        "name": {"type": "string", "maxLength": 128},
        "op": {"enum": ["=", "!=", "=~", "!~"]},
        "value": {"type": "string", "maxLength": 1024,
                  "description": "regexes are RE2, anchored as Alertmanager anchors them"},
    },
}  # fmt: skip


def _schemas() -> None:
    register_schema("FieldError", {
        "type": "object", "required": ["error", "field", "detail"],
        "properties": {"error": {"type": "string"}, "field": {"type": "string"},
                       "detail": {"type": "string"}},
    })  # fmt: skip
    register_schema("Alert", {
        "type": "object",
        "required": ["id", "rule", "state", "severity", "labels", "node", "started_at", "firing_at",
                     "resolved_at", "value", "summary", "silenced", "inhibited"],
        "properties": {
            "id": {"type": "integer"}, "rule": {"type": "string"},
            "state": {"enum": ["pending", "firing", "resolved"]},
            "severity": {"enum": ["critical", "warning", "info"]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "node": {"type": ["string", "null"]},
            "started_at": {**TIME, "description": "when the condition began (Prometheus activeAt)"},
            "firing_at": {**NULLABLE_TIME, "description": "when it fired (null while pending)"},
            "resolved_at": NULLABLE_TIME, "value": {"type": ["number", "null"]},
            "summary": {"type": "string"}, "silenced": {"type": "boolean"},
            "inhibited": {"type": "boolean"},
            "acknowledged": {"oneOf": [{"type": "null"}, {
                "type": "object", "required": ["by", "at", "comment", "until"],
                "properties": {"by": {"type": ["string", "null"]}, "at": TIME,
                               "comment": {"type": "string"}, "until": NULLABLE_TIME}}],
                "description": "who acknowledged it, when, why, until when (null: not acknowledged)"},
            "assignee": {"type": ["string", "null"], "description": "user name"},
            "hurts": {"type": "array", "description": "runs on the node when it began, largest first",
                      "items": {"type": "object", "required": ["namespace", "run", "gpus", "nodes",
                                                               "gpu_hours", "text"],
                                "properties": {
                                    "namespace": {"type": "string"}, "run": {"type": "string"},
                                    "queue": {"type": ["string", "null"]},
                                    "cluster_queue": {"type": ["string", "null"]},
                                    "team": {"type": ["string", "null"]},
                                    "gpus": {"type": "integer"}, "nodes": {"type": "integer"},
                                    "gpu_hours": {"type": "number",
                                                  "description": "GPUs × hours from the alert's start to its last match (or resolution)"},
                                    "text": {"type": "string"}}}},
        },
    })  # fmt: skip
    register_schema("Acknowledge", {
        "type": "object", "additionalProperties": False,
        "properties": {
            "comment": {"type": "string", "maxLength": 2000},
            "until": {**TIME, "description": "the acknowledgement lapses then (≤ 30 days ahead)"},
            "assignee": {"type": "string", "description": "also assign to this user"},
        },
    })  # fmt: skip
    register_schema("Silence", {
        "type": "object",
        "required": ["id", "matchers", "starts_at", "ends_at", "until_resolved", "comment",
                     "created_by", "state"],
        "properties": {
            "id": {"type": "integer"}, "matchers": {"type": "array", "items": MATCHER},
            "starts_at": TIME, "ends_at": NULLABLE_TIME, "until_resolved": {"type": "boolean"},
            "comment": {"type": "string"}, "created_by": {"type": ["string", "null"]},
            "state": {"enum": ["active", "pending", "expired"]},
        },
    })  # fmt: skip
    register_schema("NewSilence", {
        "type": "object", "required": ["matchers", "comment"], "additionalProperties": False,
        "properties": {
            "matchers": {"type": "array", "items": MATCHER, "minItems": 1, "maxItems": 64},
            "starts_at": TIME, "ends_at": TIME,
            "preset": {"type": "string", "description": "1h, 4h, 24h or until_resolved (instead of ends_at)"},
            "comment": {"type": "string", "maxLength": 2000},
            "confirm_match_all": {"type": "boolean",
                                  "description": "required for matchers that match every alert"},
        },
    })  # fmt: skip
    register_schema("Coverage", {
        "type": "object", "required": ["families", "generated_at", "prometheus", "identity"],
        "properties": {
            "families": {"type": "array", "items": {"type": "object", "required": [
                "family", "title", "status", "dialect", "metrics", "cause", "fix", "notes",
                "scrape_intervals"], "properties": {"scrape_intervals": {
                    "type": "array", "description": "per job, measured from sample spacing",
                    "items": {"type": "object", "required": ["job", "metric", "seconds"],
                              "properties": {"job": {"type": "string"}, "metric": {"type": "string"},
                                             "seconds": {"type": ["number", "null"]}}}}}}},
            "generated_at": NULLABLE_TIME, "prometheus": {"type": "string",
                                                          "description": "URL, credentials removed"},
            "identity": {"type": "array", "items": {"type": "object"},
                         "description": "per exporter: how its series were named to nodes"},
            "identity_note": {"type": "string"},
        },
    })  # fmt: skip


def _silence_paths() -> None:
    silence_id = {"name": "silence_id", "in": "path", "required": True,
                  "schema": {"type": "integer"}}  # fmt: skip
    page = {"type": "object", "required": ["silences", "count", "next"], "properties": {
        "silences": {"type": "array", "items": {"$ref": "#/components/schemas/Silence"}},
        "count": {"type": "integer"}, "next": {"type": ["string", "null"]}}}  # fmt: skip
    register_path("/api/v1/silences", "get", {
        "summary": "Silences, newest first, a page at a time",
        "parameters": [query("limit", "page size (default 100)", {"type": "integer", "minimum": 1, "maximum": 1000}),
                       query("offset", "rows to skip", {"type": "integer", "minimum": 0})],
        "responses": {"200": {"description": "a page", "content": {"application/json": {"schema": page}}},
                      "400": FIELD_ERROR},
    })  # fmt: skip
    register_path("/api/v1/silences", "post", _write({
        "summary": "Create a silence (needs alerts.add_silence; a token also needs the silence scope)",
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/NewSilence"}}}},
        "responses": {"201": json_response("the silence", "Silence")},
    }))  # fmt: skip
    register_path("/api/v1/silences/{silence_id}", "get", {
        "summary": "One silence", "parameters": [silence_id],
        "responses": {"200": json_response("the silence", "Silence"), "404": NOT_FOUND},
    })  # fmt: skip
    register_path("/api/v1/silences/{silence_id}", "delete", _write({
        "summary": "Expire a silence now (needs alerts.change_silence)", "parameters": [silence_id],
        "responses": {"200": json_response("the expired silence", "Silence"), "404": NOT_FOUND},
    }))  # fmt: skip


def _ack_paths() -> None:
    alert_id = {"name": "alert_id", "in": "path", "required": True, "schema": {"type": "integer"}}
    missing = {"description": "No such alert (JSON error)"}
    conflict = {"description": "Not possible in the alert's state (resolved; not acknowledged; "
                               "not assigned), JSON error naming the field"}  # fmt: skip
    register_path("/api/v1/alerts/{alert_id}/ack", "post", _write({
        "summary": "Acknowledge an active alert: no repeat notifications until it resolves or "
                   "until `until` (needs alerts.change_alerttriage; a token also the silence scope)",
        "parameters": [alert_id],
        "requestBody": {"required": False, "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/Acknowledge"}}}},
        "responses": {"200": json_response("the alert", "Alert"), "404": missing, "409": conflict},
    }))  # fmt: skip
    register_path("/api/v1/alerts/{alert_id}/ack", "delete", _write({
        "summary": "Remove an alert's acknowledgement (repeat notifications resume)",
        "parameters": [alert_id],
        "responses": {"200": json_response("the alert", "Alert"), "404": missing, "409": conflict},
    }))  # fmt: skip
    register_path("/api/v1/alerts/{alert_id}/assign", "post", _write({
        "summary": "Assign an alert to a user (`null`: unassign)", "parameters": [alert_id],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["assignee"], "additionalProperties": False,
            "properties": {"assignee": {"type": ["string", "null"]}}}}}},
        "responses": {"200": json_response("the alert", "Alert"), "404": missing, "409": conflict},
    }))  # fmt: skip


def _override_paths() -> None:
    register_schema("RuleOverride", {
        "type": "object", "required": ["id", "rule", "scope", "value", "params", "updated_at", "updated_by"],
        "properties": {"id": {"type": "integer"}, "rule": {"type": "string"},
                       "scope": {"enum": ["pool", "gpu_model"]}, "value": {"type": "string"},
                       "params": {"type": "object", "description": "the rule's params, validated"},
                       "updated_at": TIME, "updated_by": {"type": ["string", "null"]}},
    })  # fmt: skip
    listing = {"type": "object", "required": ["overrides"], "properties": {
        "overrides": {"type": "array", "items": {"$ref": "#/components/schemas/RuleOverride"}}}}  # fmt: skip
    register_path("/api/v1/rule-overrides", "get", {
        "summary": "Per-pool and per-GPU-model rule overrides",
        "responses": {"200": {"description": "every override",
                              "content": {"application/json": {"schema": listing}}}},
    })  # fmt: skip
    register_path("/api/v1/rule-overrides", "post", _write({
        "summary": "Create (201) or replace (200) a rule's params for one pool or GPU model "
                   "(needs alerts.add_ruleoverride and alerts.change_ruleoverride)",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["rule", "scope", "value", "params"], "additionalProperties": False,
            "properties": {"rule": {"type": "string"}, "scope": {"enum": ["pool", "gpu_model"]},
                           "value": {"type": "string", "maxLength": 253}, "params": {"type": "object"}}}}}},
        "responses": {"200": json_response("the replaced override", "RuleOverride"),
                      "201": json_response("the new override", "RuleOverride")},
    }))  # fmt: skip
    register_path("/api/v1/rule-overrides/{override_id}", "delete", _write({
        "summary": "Remove an override (needs alerts.delete_ruleoverride)",
        "parameters": [{"name": "override_id", "in": "path", "required": True, "schema": {"type": "integer"}}],
        "responses": {"200": json_response("the removed override", "RuleOverride"),
                      "404": {"description": "No such override (JSON error)"}},
    }))  # fmt: skip


def _write(operation: dict[str, Any]) -> dict[str, Any]:
    operation["responses"].update({"400": FIELD_ERROR, "403": FORBIDDEN,
                                   "413": {"description": "body too large (JSON error)"}})  # fmt: skip
    return operation


def register() -> None:
    """Register the alerts, silences and coverage paths and their schemas."""
    _schemas()
    alerts = {"type": "object", "required": ["alerts", "next"], "properties": {
        "alerts": {"type": "array", "items": {"$ref": "#/components/schemas/Alert"}},
        "next": {"type": ["string", "null"], "description": "the next page (same filters, a cursor)"}}}  # fmt: skip
    register_path("/api/v1/alerts", "get", {
        "summary": "Alerts (pending, firing, resolved), newest first, a page at a time; JSON or CSV",
        "parameters": [
            query("state", "only this state", {"enum": ["firing", "pending", "resolved"]}),
            query("rule", "only this rule id", {"type": "string"}),
            query("severity", "only this severity", {"enum": ["critical", "warning", "info"]}),
            query("node", "only this node", {"type": "string"}),
            *[query(name, f"only alerts labelled {name}=<value>", {"type": "string"})
              for name in ("namespace", "team", "pool", "run", "queue")],
            query("since", "alerts still active at or after this time (ISO 8601)", TIME),
            query("until", "alerts begun at or before this time (ISO 8601)", TIME),
            query("cursor", "from the previous page's next", {"type": "string"}),
            query("limit", "page size (default 500)", {"type": "integer", "minimum": 1, "maximum": 5000}),
            query("format", "json (default) or csv (cells that start like a formula get a leading ')",
                  {"enum": ["json", "csv"]}),
        ],
        "responses": {"200": {"description": "the alerts (CSV: the next page in a Link header)",
                              "content": {"application/json": {"schema": alerts},
                                          "text/csv": {"schema": {"type": "string"}}}},
                      "400": FIELD_ERROR},
    })  # fmt: skip
    _ack_paths()
    _override_paths()
    _silence_paths()
    register_path("/api/v1/coverage", "get", {
        "summary": "Which exporter metrics Prometheus has, per family, with causes and fixes; node identity",
        "responses": {"200": json_response("the coverage report", "Coverage"),
                      "503": {"description": "Prometheus unreachable or a query ran out of its time "
                                             "budget: names it (JSON)"}},
    })  # fmt: skip
