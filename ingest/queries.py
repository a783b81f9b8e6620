"""All PromQL that ingest runs, in one place, per family and dialect.

Settings can override any entry: ``INGEST_PROMQL_OVERRIDES`` maps
"family.dialect.name" to a PromQL string (env ``INGEST_PROMQL_OVERRIDES`` as JSON).
"""

from __future__ import annotations

# --- gpu / ib / topology (owned by the ingest-core work) --------------------
GPU: dict[str, dict[str, str]] = {}
IB: dict[str, dict[str, str]] = {}
TOPOLOGY: dict[str, dict[str, str]] = {}

# --- kueue / cluster / runs / checkpoints (owned by the cluster-families work)
KUEUE: dict[str, dict[str, str]] = {}
CLUSTER: dict[str, dict[str, str]] = {}
RUNS: dict[str, dict[str, str]] = {}
CHECKPOINTS: dict[str, dict[str, str]] = {}
