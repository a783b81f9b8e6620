"""Hot IB samples in compacted history's encodings (``ingest.ib_encoded``): what is written
where, exactly once, and what every reader gets back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test import override_settings

from ingest import ib_encoded
from ingest.models import IbHotSample
from ingest.store import IB_TABLE, insert_rows, stored_ib_values, upsert_nodes, upsert_ports
from tests.support.encodings import float4

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
STEP = 30


def port_row(ts: datetime, port: int, node: int, **values: float | int | None) -> tuple:
    """An IB_TABLE row: a healthy, busy port unless ``values`` say otherwise."""
    healthy = {
        "tx_bytes": 25071541715.2, "rx_bytes": 2.5e10, "tx_packets": 6428600.4, "rx_packets": 6.4e6,
        "xmit_wait": 62678.86, "symbol_errors": 0.0, "link_downed": 0.0, "link_error_recovery": 0.0,
        "rcv_errors": 0.0, "local_link_integrity": 0.0, "excessive_buffer_overrun": 0.0,
        "rate": 5e10, "state": 4, "phys_state": 5, "saturated": 0,
    }  # fmt: skip
    return (ts, port, node, *({**healthy, **values}[c] for c in IB_TABLE.columns[3:]))


def write(rows: list[tuple]) -> int:
    with transaction.atomic():
        return insert_rows(IB_TABLE, rows)


def tables() -> tuple[list[tuple], list[tuple]]:
    """(encoded rows as (port, ts, marks), float8 rows as (port, ts))."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT port_id, ts, marks FROM {ib_encoded.TABLE} ORDER BY 1, 2")
        encoded = cursor.fetchall()
        cursor.execute("SELECT port_id, ts FROM ingest_ibsample ORDER BY 1, 2")
        return encoded, cursor.fetchall()


def read(lo: datetime, hi: datetime) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT port_id, ts, tx_bytes, xmit_wait, symbol_errors, rate, state, saturated "
            "FROM ingest_ib_rows(%s, %s) ORDER BY 1, 2",
            [lo, hi],
        )
        return cursor.fetchall()


@pytest.fixture
def ports() -> tuple[int, int, int]:
    """(node, port 1, port 2)."""
    node = upsert_nodes({"gpu-a": (T0, T0)})["gpu-a"]
    ids = upsert_ports([(node, "mlx5_0", 1, ""), (node, "mlx5_1", 1, "")])
    return node, ids[(node, "mlx5_0", 1)], ids[(node, "mlx5_1", 1)]


def test_values_keep_the_documented_precision(ports: tuple[int, int, int]) -> None:
    node, port, _ = ports
    t1 = T0 + timedelta(seconds=STEP)
    assert write([port_row(T0, port, node), port_row(t1, port, node, symbol_errors=3.0)]) == 2
    assert tables() == ([(port, T0, 0), (port, t1, 1)], [])
    # Rates as float4 (relative 2^-24), error increases and states exact, the link rate float8.
    assert read(T0, t1) == [
        (port, T0, float4(25071541715.2), float4(62678.86), 0.0, 5e10, 4, 0),
        (port, t1, float4(25071541715.2), float4(62678.86), 3.0, 5e10, 4, 0),
    ]
    assert IbHotSample.objects.count() == 2


def test_samples_an_encoding_cannot_hold_stay_float8_rows(ports: tuple[int, int, int]) -> None:
    node, port, other = ports
    off_grid = T0 + timedelta(seconds=7)
    rows = [
        port_row(T0, port, node, symbol_errors=0.5),  # an increase is a whole count
        port_row(T0, other, node, rcv_errors=40000.0),  # over a smallint's range (32,767)
        port_row(off_grid, port, node),  # off the step grid
        port_row(T0 + timedelta(seconds=STEP), port, node),  # fits
    ]
    assert write(rows) == 4
    assert tables() == (
        [(port, T0 + timedelta(seconds=STEP), 0)],
        [(port, T0), (port, off_grid), (other, T0)],
    )
    got = {(r[0], r[1]): r[4] for r in read(T0, T0 + timedelta(seconds=STEP))}
    assert got == {(port, T0): 0.5, (port, off_grid): 0.0, (other, T0): 0.0,
                   (port, T0 + timedelta(seconds=STEP)): 0.0}  # fmt: skip


def test_a_rerun_writes_nothing_whichever_table_holds_the_step(ports: tuple[int, int, int]) -> None:
    node, port, other = ports
    with override_settings(INGEST_ENCODED_HOT_ROWS=False):
        assert write([port_row(T0, port, node)]) == 1
    again = [port_row(T0, port, node, tx_bytes=1.0), port_row(T0, other, node)]
    assert write(again) == 1
    assert tables() == ([(other, T0, 0)], [(port, T0)])
    assert [(r[0], r[2]) for r in read(T0, T0)] == [
        (port, 25071541715.2),
        (other, float4(25071541715.2)),
    ]
    assert write(again) == 0


def test_marks_serve_the_port_rules_through_their_partial_indexes(
    ports: tuple[int, int, int],
) -> None:
    node, port, other = ports
    write([port_row(T0, port, node, state=1), port_row(T0, other, node, xmit_wait=4e7)])
    assert tables()[0] == [(port, T0, 1), (other, T0, 2)]
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # two rows: make the planner show its options
        cursor.execute(
            "EXPLAIN SELECT * FROM ingest_ib_rows(%s, %s, 2) "
            "WHERE saturated <> 0 OR xmit_wait >= 0.000625 * rate",
            [T0, T0],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
        cursor.execute(
            "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = "
            "'ingest_ibencoded_p20260302'::regclass AND pg_get_expr(indpred, indrelid) LIKE '%& 2) = 2)'"
        )
        [(wait_index,)] = cursor.fetchall()
        cursor.execute(
            "SELECT port_id FROM ingest_ib_rows(%s, %s, 2) WHERE saturated <> 0 OR xmit_wait >= 0.000625 * rate",
            [T0, T0],
        )
        assert cursor.fetchall() == [(other,)]
    assert f"Index Scan using {wait_index} on ingest_ibencoded_p20260302" in plan, plan


def test_the_counters_carried_into_the_next_window_come_from_encoded_rows(
    ports: tuple[int, int, int],
) -> None:
    node, port, _ = ports
    write([port_row(T0, port, node, link_downed=2.0)])
    carried = stored_ib_values(T0, ["link_downed", "state"])
    assert carried == {
        "link_downed": {("gpu-a", "mlx5_0", 1): 2.0},
        "state": {("gpu-a", "mlx5_0", 1): 4},
    }
