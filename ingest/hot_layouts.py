"""What the encoded hot tables share (``ingest.gpu_steps``, ``ingest.ib_encoded``).

Each keeps hot samples in compacted history's encodings beside the float8 hot table of its
family, and has a function writing its rows back in the hot layout (``Rows``: source,
``where``, column ``mask`` → SQL). From that, the same four pieces for both: the reader
functions' branch, the rows of one hour for compaction, compaction's delete, and the view
of every hot sample.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .history import HistoryTable, on_grid_sql

#: (source table or CTE, SQL ``where`` over its rows ``s``, SQL column mask or "") → SQL of
#: the rows in the hot layout (ts, keys, values as readers get them).
Rows = Callable[[str, str, str], str]


@dataclass(frozen=True)
class EncodedHot:
    """An encoded hot table: its name, its view, its family's tables, and the SQL that writes
    (``ingest.store``) and reads it (``rows``)."""

    table: str
    view: str
    family: HistoryTable
    rows: Rows
    #: step seconds → SQL predicate over a staged float8 row: it can be kept encoded
    fits: Callable[[int], str]
    #: (stage, fits predicate) → SQL writing the stage's fitting rows encoded
    insert: Callable[[str, str], str]
    #: stage → SQL statements deleting from it the device steps already stored in either table
    stored: Callable[[str], tuple[str, ...]]

    def reader_sql(self) -> str:
        """The branch of the family's reader function (``history.function_sql``): ``$1 <= ts
        <= $2``, only rows with the marks ``$3`` (partial indexes serve it), columns ``$4``."""
        marked = "s.ts >= $1 AND s.ts <= $2 AND ($3 = 0 OR (s.marks & $3) = $3)"
        return self.rows(self.table, marked, "$4")

    def hour_rows_sql(self, step: int) -> str:
        """The hot-layout rows of one hour (``%(hour)s``, ``%(next)s``) on the step grid."""
        return self.rows(self.table, on_grid_sql(step, "s.ts"), "")

    def move_parts(self, step: int) -> tuple[str, str]:
        """``history.move_sql``'s ``also``: delete the hour's rows, and their hot-layout rows."""
        cte = f"moved_{self.table}"
        return (
            f", {cte} AS (DELETE FROM {self.table} WHERE {on_grid_sql(step)} RETURNING *)",
            self.rows(cte, "true", ""),
        )

    def view_sql(self) -> str:
        """CREATE VIEW of every hot sample of the family in the hot layout (float8 rows and
        these rows), for tests and ad-hoc SQL; the planner pushes conditions into both."""
        columns = ", ".join(("ts", *self.family.key_columns, *self.family.columns))
        return (
            f"CREATE VIEW {self.view} AS SELECT {columns} FROM {self.family.hot} "
            f"UNION ALL SELECT {columns} FROM ({self.rows(self.table, 'true', '')}) enc;"
        )
