"""Hot IB samples in compacted history's encodings (``ingest_ibencoded``): one row per port and step.

A hot IB row of ``ingest_ibsample`` keeps its 14 values as ``float8`` (~194 B a row with
its key). Here each value is kept as history keeps it (``ingest.history.IB_ENCODINGS``:
``real`` rates, exact error increases, ``smallint`` states), so a row is ~60 B smaller
and hot and compacted reads return the same values. ``marks`` is history's bit
set (``IB_HISTORY.marks``), with a partial index per bit for the port rules' candidates.

Ingest writes a port's sample here when it sits on the step grid and every value fits its
encoding (``ingest.history.compactable_sql``); any other goes to ``ingest_ibsample`` as
before. Readers see both through ``ingest_ib_rows``; compaction moves both into history.
"""

from __future__ import annotations

from dataclasses import replace

from .history import IB_HISTORY, compactable_sql, mark_indexes_sql, marks_sql
from .hot_layouts import EncodedHot

TABLE = "ingest_ibencoded"
#: Error increases as ``smallint`` here (``integer`` in history). The PortCounters error
#: counters are 16, 8 or 4 bits wide and saturate (docs/infiniband.md "Counter widths and
#: saturation", from the kernel's PORT_PMA_ATTR widths): only symbol and receive errors can
#: rise by more than 32,767 in a step, and such a sample stays a float8 row (``fits_sql``),
#: as does a fractional increase (a slow scrape's increase spread over steps). The row is
#: then 88 B, a multiple of 8, instead of 100 B padded to 104.
_SMALL = {"symbol_errors", "link_downed", "link_error_recovery", "rcv_errors",
          "local_link_integrity", "excessive_buffer_overrun"}  # fmt: skip
ENCODINGS = tuple(
    replace(e, element="smallint", precision="exact, up to 32,767 per step (more: a float8 row)")
    if e.column in _SMALL
    else e
    for e in IB_HISTORY.encodings
)
_TABLE = replace(IB_HISTORY, encodings=ENCODINGS)
_WIDTH = {"double precision": 8, "integer": 4, "real": 4, "smallint": 2}
#: Widest first: no alignment padding between present values.
_ORDER = sorted(ENCODINGS, key=lambda e: -_WIDTH[e.element])
_KEYS = "ts, port_id, node_id"


def table_sql() -> str:
    """CREATE TABLE of the encoded rows (partitioned by day on ``ts``) and their indexes."""
    wide = [e for e in _ORDER if _WIDTH[e.element] == 8]
    rest = [e for e in _ORDER if _WIDTH[e.element] < 8]
    columns = ", ".join(
        [f"{e.column} {e.element}" for e in wide]
        + ["port_id integer NOT NULL", "node_id integer NOT NULL"]
        + [f"{e.column} {e.element}" for e in rest]
    )
    return (
        f"CREATE TABLE {TABLE} (ts timestamptz NOT NULL, {columns}, "
        "marks smallint NOT NULL DEFAULT 0, "
        f"PRIMARY KEY (port_id, ts)) PARTITION BY RANGE (ts);" + mark_indexes_sql(IB_HISTORY, TABLE)
    )


def decoded_sql(source: str, where: str = "true", mask: str = "") -> str:
    """SQL: the hot-layout rows (ts, port_id, node_id, values as readers get them) of rows ``s``."""
    values = ", ".join(
        f"CASE WHEN ({mask}) & {1 << i} <> 0 THEN {e.decode('s.' + e.column)} END AS {e.column}"
        if mask
        else f"{e.decode('s.' + e.column)} AS {e.column}"
        for i, e in enumerate(ENCODINGS)
    )
    return f"SELECT s.ts, s.port_id, s.node_id, {values} FROM {source} s WHERE {where}"


def fits_sql(step: int) -> str:
    """SQL predicate over a hot-layout IB row: it can be kept encoded without loss."""
    if 3600 % step:  # not compactable either: every row stays as it is
        return "false"
    return f"({compactable_sql(_TABLE, step)})"


def insert_sql(stage: str, fits: str) -> str:
    """SQL writing the fitting rows of ``stage`` encoded (marks judged on the encoded values,
    as compaction judges them); a port's step already stored is left as it is."""
    names = ", ".join(e.column for e in ENCODINGS)
    rounded = ", ".join(f"{e.decode(e.encode(e.column))} AS {e.column}" for e in ENCODINGS)
    encoded = ", ".join(e.encode("r." + e.column) for e in ENCODINGS)
    marks = marks_sql(IB_HISTORY, aggregate=False)
    return (
        f"INSERT INTO {TABLE} ({_KEYS}, marks, {names}) "
        f"SELECT r.ts, r.port_id, r.node_id, ({marks})::smallint, {encoded} "
        f"FROM (SELECT {_KEYS}, {rounded} FROM {stage} WHERE {fits}) r "
        "ORDER BY r.port_id, r.ts ON CONFLICT DO NOTHING"
    )


def stored_sql(stage: str) -> tuple[str, ...]:
    """SQL deleting from ``stage`` the ports' steps already stored: encoded, then as-is
    (so a step is written once whichever table the earlier write chose)."""
    return tuple(
        f"DELETE FROM {stage} s USING {table} t WHERE t.port_id = s.port_id AND t.ts = s.ts"
        for table in (TABLE, IB_HISTORY.hot)
    )


#: The reader branch, compaction's pieces and the view (``ingest.hot_layouts``).
LAYOUT = EncodedHot(
    TABLE, "ingest_ibhot", IB_HISTORY, decoded_sql, fits_sql, insert_sql, stored_sql
)
VIEW = LAYOUT.view
