"""The node page's per-device series of both families (GPU, IB) in one round trip.

``selectors.node_gpu_series`` and ``selectors.node_ib_series`` read a node's tiles one family
at a time, through Django's client-side cursor: values travel as text (every float of a
15-column IB tile parsed in Python, every tile's hour parsed as a timestamp) and each family
is a round trip of its own. Under bench_load's 50 users the page waits for a CPU at every
round trip, and parsing the text was a third of its Python time.

``node_series`` asks for both families' tiles (``node_tiles.READ``) in one statement, in
binary (psycopg's C loaders build the float arrays and timestamps), and assembles them with
``node_tiles.assemble``: the same rows, so the same values. Windows the tiles do not cover
(1 h raw, 7 d at 30-minute steps, tiles off, no cursor) go through the selectors as before.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import NamedTuple

import orjson
import psycopg
from django.db import connection

from . import node_tiles, selectors
from .models import IbPort, Node, PoolChange
from .selectors import NodeSeries, windows
from .selectors.series import node_plan

FAMILIES = ("gpu", "ib")
#: Both families' ``READ`` in one statement, each row tagged with its family.
READ_BOTH = " UNION ALL ".join(
    f"SELECT '{family}' AS family, r.* FROM ({node_tiles.READ[family]}) r" for family in FAMILIES
)


def _read_both(node: str, start: datetime, end: datetime) -> dict[str, list[tuple]]:
    """family → the rows of its ``node_tiles.READ``, one binary round trip."""
    connection.ensure_connection()
    found: dict[str, list[tuple]] = {family: [] for family in FAMILIES}
    # A server-side-binding cursor of Django's own connection (its pooled one, same
    # transaction), not prepared: a generic plan would lock every rollup partition.
    params = node_tiles.read_params(node, start, end)
    began = time.monotonic()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(READ_BOTH, params, binary=True)
        for family, *row in cursor.fetchall():
            found[family].append(tuple(row))
    if connection.queries_logged:  # as Django's debug cursor logs its own (DEBUG, tests)
        sql = f"{READ_BOTH} -- {params}"
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - began:.3f}"})
    return found


def node_series(
    node: str, start: datetime, end: datetime, step: int, tiles: bool = True
) -> tuple[NodeSeries, NodeSeries]:
    """(GPU, IB) ``NodeSeries`` of ``node``, equal to ``selectors.node_gpu_series`` and
    ``selectors.node_ib_series`` with the same arguments; one query where tiles cover the window."""
    if not node_plan(start, end, step, tiles).tiled:
        return (
            selectors.node_gpu_series(node, start, end, step, tiles),
            selectors.node_ib_series(node, start, end, step, tiles),
        )
    times = windows.bucket_times(start, end, windows.ROLLUP_STEP_SECONDS)
    found = _read_both(node, start, end)
    answers = []
    for family, read in zip(
        FAMILIES, (selectors.node_gpu_series, selectors.node_ib_series), strict=True
    ):
        until, series = node_tiles.assemble(family, found[family], start, end)
        if until is None:  # no cursor: what the tiles hold is not known
            answers.append(read(node, start, end, step, False))
            continue
        ordered = dict(sorted(series.items()))
        answers.append(NodeSeries(node, times, ordered, windows.ROLLUP_STEP_SECONDS, "rollup"))
    return answers[0], answers[1]


class NodeFacts(NamedTuple):
    """What the node page shows besides the series, read in one query (``node_facts``)."""

    node: Node
    #: family → its ``IngestCursor.covered_until`` (the families with a cursor)
    cursors: dict[str, datetime]
    #: the node's IB ports by device and port
    ports: list[IbPort]
    #: its last 10 pool changes, newest first
    pool_changes: list[PoolChange]
    #: (ts, gpu, code, message) of its XID events in the window, oldest first, at most 500
    xids: list[tuple[datetime, int, int, str]]


def _json_rows(select: str, order: str) -> str:
    return f"(SELECT coalesce(json_agg(r ORDER BY {order}), '[]')::text FROM ({select}) r)"


NODE_FACTS = (
    "WITH n AS (SELECT id, name, pool, unschedulable, leaf_switch, gpu_model, first_seen, "
    "last_seen FROM ingest_node WHERE name = %(node)s) SELECT row_to_json(n)::text, "
    "(SELECT coalesce(json_object_agg(family, covered_until), '{}')::text FROM ingest_ingestcursor), "
    + ", ".join([
        _json_rows("SELECT id, device, port, guid, leaf_switch, switch_port FROM ingest_ibport "
                   "WHERE node_id = n.id", "r.device, r.port"),
        _json_rows("SELECT id, ts, pool FROM ingest_poolchange WHERE node_id = n.id "
                   "ORDER BY ts DESC LIMIT 10", "r.ts DESC"),
        _json_rows("SELECT ts, gpu, code, message FROM ingest_xidevent WHERE node_id = n.id "
                   "AND ts >= %(start)s AND ts < %(end)s ORDER BY ts, gpu LIMIT 500", "r.ts, r.gpu"),
    ])
    + " FROM n"
)  # fmt: skip


def node_facts(name: str, start: datetime, end: datetime) -> NodeFacts | None:
    """The node ``name`` (None: no such node), the cursors, its ports, pool changes and XID
    events in [start, end), as the ORM reads them one query each, in one round trip (its runs
    are the runs app's: ``runs.selectors.runs_on_node``)."""
    with connection.cursor() as cursor:
        cursor.execute(NODE_FACTS, {"node": name, "start": start, "end": end})
        found = cursor.fetchone()
    if found is None:
        return None
    node, cursors, ports, changes, xids = map(orjson.loads, found)
    node.update(
        first_seen=datetime.fromisoformat(node["first_seen"]),
        last_seen=datetime.fromisoformat(node["last_seen"]),
    )
    row = Node(**node)
    return NodeFacts(
        row,
        {family: datetime.fromisoformat(covered) for family, covered in cursors.items()},
        [IbPort(node=row, **port) for port in ports],
        [
            PoolChange(node=row, id=c["id"], ts=datetime.fromisoformat(c["ts"]), pool=c["pool"])
            for c in changes
        ],
        [(datetime.fromisoformat(x["ts"]), x["gpu"], x["code"], x["message"]) for x in xids],
    )
