"""Hot GPU samples as step rows: one row per node, step and slot of 8 GPUs (``ingest_gpustep``).

A per-GPU hot row (``ingest_gpusample``) costs ~147 B for the ~6 values dcgm-exporter
sends per GPU and step: the tuple header, line pointer, keys and a primary-key entry are
paid per GPU. A step row pays them once for eight GPUs (``slot`` k holds GPUs 8k … 8k+7)
and keeps each value in compacted history's encoding (``ingest.history.GPU_ENCODINGS``:
``smallint``, ``integer`` × scale, ``real``), so hot and compacted reads return the same
values. ``present`` bit g says GPU 8·slot+g has a sample at the step; ``marks`` is
history's bit set (``GPU_HISTORY.marks``, OR over the row's GPUs), with a partial index per bit.

Ingest writes a GPU's sample here when it sits on the step grid and every value fits its
encoding (``ingest.history.compactable_sql``); any other sample (off the grid, a value out of an encoding's
range, no value at all) goes to ``ingest_gpusample`` as before, so nothing is rounded beyond
the precision table in docs/scaling.md. Readers see both through ``ingest_gpu_rows``
(``unpivot_sql``), and compaction moves both into history.
"""

from __future__ import annotations

from .history import GPU_HISTORY, Encoding, compactable_sql, mark_indexes_sql, marks_sql
from .hot_layouts import EncodedHot

TABLE = "ingest_gpustep"
SLOT_GPUS = 8
ENCODINGS = GPU_HISTORY.encodings
#: 4-byte columns first, then 2-byte ones: no alignment padding between present values.
_WIDE = tuple(e for e in ENCODINGS if e.element in {"integer", "real"})
_NARROW = tuple(e for e in ENCODINGS if e.element == "smallint")
assert len(_WIDE) + len(_NARROW) == len(ENCODINGS), "an encoding wider than 4 bytes"


def cell(encoding: Encoding, gpu: int) -> str:
    """The column of ``encoding``'s metric for GPU ``gpu`` of a slot."""
    return f"{encoding.column}_{gpu}"


def cells() -> list[str]:
    """Every value column of a step row, in table order."""
    return [c for c, _ in _cells(_WIDE) + _cells(_NARROW)]


def _cells(encodings: tuple[Encoding, ...]) -> list[tuple[str, str]]:
    return [(cell(e, g), e.element) for e in encodings for g in range(SLOT_GPUS)]


def table_sql() -> str:
    """CREATE TABLE of the step rows (partitioned by day on ``ts``) and their indexes."""
    columns = ", ".join(f"{c} {t}" for c, t in _cells(_WIDE) + _cells(_NARROW))
    return (
        f"CREATE TABLE {TABLE} (ts timestamptz NOT NULL, node_id integer NOT NULL, {columns}, "
        "slot smallint NOT NULL, present smallint NOT NULL, marks smallint NOT NULL DEFAULT 0, "
        f"PRIMARY KEY (node_id, slot, ts)) PARTITION BY RANGE (ts);"
        + mark_indexes_sql(GPU_HISTORY, TABLE)
    )


def unpivot_sql(source: str, where: str = "true", mask: str = "") -> str:
    """SQL: the per-GPU rows (ts, node_id, gpu, values as readers get them) of step rows ``s``.

    ``where`` filters step rows before they are split; ``mask`` (SQL, bit i: the i-th
    encoding) leaves the other values NULL, as history's decoding does. Each metric's eight
    cells are unnested in the select list, in lockstep with ``generate_series(0, 7)``: ~4×
    cheaper than a ``LATERAL (VALUES …)`` of eight rows per step row (a rescan per row), and
    a masked-out metric (a constant mask folds) builds no array at all.
    """
    arrays = ", ".join(
        f"unnest({_masked(mask, i, _array(e))}) AS {e.column}" for i, e in enumerate(ENCODINGS)
    )
    values = ", ".join(f"{e.decode('x.' + e.column)} AS {e.column}" for e in ENCODINGS)
    return (
        f"SELECT x.ts, x.node_id, (x.slot * {SLOT_GPUS} + x.g)::smallint AS gpu, {values} "
        f"FROM (SELECT s.ts, s.node_id, s.slot, s.present, generate_series(0, {SLOT_GPUS - 1}) AS g, "
        f"{arrays} FROM {source} s WHERE {where}) x WHERE x.present & (1 << x.g) <> 0"
    )


def _array(encoding: Encoding) -> str:
    return f"ARRAY[{', '.join('s.' + cell(encoding, g) for g in range(SLOT_GPUS))}]"


def _masked(mask: str, bit: int, value: str) -> str:
    return f"CASE WHEN ({mask}) & {1 << bit} <> 0 THEN {value} END" if mask else value


def fits_sql(step: int) -> str:
    """SQL predicate over a per-GPU row: it can be kept as a step row without loss."""
    if 3600 % step:  # not compactable either: every row stays per GPU
        return "false"
    return f"(gpu >= 0 AND {compactable_sql(GPU_HISTORY, step)})"


def insert_sql(stage: str, fits: str) -> str:
    """SQL writing the fitting per-GPU rows of ``stage`` as step rows.

    A step row that exists gains the GPUs it lacks (``ingest.store`` has removed from the
    stage every GPU already stored, so a GPU's cells are written once). Marks are judged on
    the encoded values, as compaction judges them.
    """
    slot = f"gpu / {SLOT_GPUS}"
    rounded = ", ".join(f"{e.decode(e.encode(e.column))} AS {e.column}" for e in ENCODINGS)
    marks = marks_sql(GPU_HISTORY, aggregate=True)
    cells = _cells(_WIDE) + _cells(_NARROW)
    picks = ", ".join(
        f"max({e.encode('r.' + e.column)}) FILTER (WHERE r.gpu % {SLOT_GPUS} = {g})"
        for e in _WIDE + _NARROW
        for g in range(SLOT_GPUS)
    )
    merged = ", ".join(f"{c} = coalesce(t.{c}, EXCLUDED.{c})" for c, _ in cells)
    return (
        f"INSERT INTO {TABLE} AS t (ts, node_id, slot, present, marks, {', '.join(c for c, _ in cells)}) "
        f"SELECT r.ts, r.node_id, ({slot})::smallint, bit_or(1 << (r.gpu % {SLOT_GPUS}))::smallint, "
        f"({marks})::smallint, {picks} "
        f"FROM (SELECT ts, node_id, gpu, {rounded} FROM {stage} WHERE {fits}) r "
        f"GROUP BY r.ts, r.node_id, r.gpu / {SLOT_GPUS} ORDER BY r.node_id, 3, r.ts "
        f"ON CONFLICT (node_id, slot, ts) DO UPDATE SET present = t.present | EXCLUDED.present, "
        f"marks = t.marks | EXCLUDED.marks, {merged}"
    )


def stored_sql(stage: str) -> tuple[str, ...]:
    """SQL deleting from ``stage`` the GPUs' steps already stored: as step rows, then per GPU
    (so a step is written once whichever table the earlier write chose)."""
    return (
        f"DELETE FROM {stage} s USING {TABLE} t WHERE s.gpu >= 0 AND t.node_id = s.node_id "
        f"AND t.slot = s.gpu / {SLOT_GPUS} AND t.ts = s.ts "
        f"AND t.present & (1 << (s.gpu % {SLOT_GPUS})) <> 0",
        f"DELETE FROM {stage} s USING {GPU_HISTORY.hot} h "
        "WHERE h.node_id = s.node_id AND h.gpu = s.gpu AND h.ts = s.ts",
    )


#: The reader branch, compaction's pieces and the view (``ingest.hot_layouts``).
LAYOUT = EncodedHot(
    TABLE, "ingest_gpuhot", GPU_HISTORY, unpivot_sql, fits_sql, insert_sql, stored_sql
)
VIEW = LAYOUT.view
