"""Per-node 5-minute rollups: one row per node and bucket, folded from the GPU and port rollups."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from ingest import partitions, rollups, selectors
from ingest.models import NodeRollup
from ingest.store import GPU_TABLE, insert_rows
from tests.ingest.test_selectors import T0, seed

pytestmark = pytest.mark.django_db

GPU_COLUMNS = ("gpus", "util_gpus", "tensor_gpus", "drifted_gpus", "util", "tensor", "drift",
               "nvlink_bw", "nvlink_errors")  # fmt: skip
IB_COLUMNS = ("ports", "active_ports", "ib_tx", "ib_rx", "ib_xmit_wait", "ib_errors")


def node_rollups() -> dict[tuple[str, object], dict[str, object]]:
    rows = NodeRollup.objects.values("node__name", "ts", *GPU_COLUMNS, *IB_COLUMNS)
    return {(row.pop("node__name"), row.pop("ts")): row for row in rows}


def test_node_rollup_folds_a_nodes_gpus_and_ports_per_bucket() -> None:
    seed()  # steps at T0+30 s … T0+600 s: buckets T0 (9 steps), T0+5 min (10), T0+10 min (1)
    rows = node_rollups()
    assert sorted(rows) == sorted((n, T0 + timedelta(minutes=m)) for n in ("gpu-a", "gpu-b")
                                  for m in (0, 5, 10))  # fmt: skip
    drifting = rows["gpu-b", T0]
    assert {c: drifting[c] for c in GPU_COLUMNS} == {
        "gpus": 2, "util_gpus": 2, "tensor_gpus": 2,
        "drifted_gpus": 1,  # GPU 1: util 100 % ≥ 50 %, tensor 0.05 ≤ 0.10
        "util": 100.0,
        "tensor": pytest.approx(0.325, abs=1e-12),  # mean of 0.6 and 0.05
        "drift": pytest.approx(0.675, abs=1e-12),  # mean of 1 − 0.6 and 1 − 0.05
        "nvlink_bw": 2e9,  # 1 GB/s per GPU, summed
        "nvlink_errors": 2.0,  # one recovery per GPU at step 5
    }  # fmt: skip
    # gpu-b has no IB ports: its IB columns stay empty, so IB heatmaps leave it out.
    assert {c: drifting[c] for c in IB_COLUMNS} == {
        "ports": 0, "active_ports": 0, "ib_tx": None, "ib_rx": None, "ib_xmit_wait": None,
        "ib_errors": None,
    }  # fmt: skip
    healthy = rows["gpu-a", T0 + timedelta(minutes=5)]
    assert (healthy["drifted_gpus"], healthy["nvlink_errors"]) == (0, 0.0)
    assert {c: healthy[c] for c in IB_COLUMNS} == {
        "ports": 2, "active_ports": 2, "ib_tx": 3e9, "ib_rx": 4e9, "ib_xmit_wait": 20.0,
        "ib_errors": 0.0,
    }  # fmt: skip


def test_node_rollup_follows_a_bucket_completed_by_a_later_cycle() -> None:
    seed()
    node_id = NodeRollup.objects.filter(node__name="gpu-a").values_list("node_id", flat=True)[0]
    late = T0 + timedelta(seconds=630)  # a third GPU reports into bucket T0+10 min
    row = (late, node_id, 2, 0.0, 0.0, None, None, 100.0, 40.0, 0.0, 0.0, 0.0, 0.0, 3.0)
    insert_rows(GPU_TABLE, [row])
    rollups.refresh("gpu", late, late)
    bucket = node_rollups()["gpu-a", T0 + timedelta(minutes=10)]
    assert (bucket["gpus"], bucket["util"], bucket["nvlink_errors"]) == (
        3,
        pytest.approx(200 / 3),
        3.0,
    )
    assert bucket["ports"] == 2  # the IB half of the row is untouched by a GPU refresh


def test_long_window_heatmap_reads_node_rollups_with_the_same_values() -> None:
    seed()
    window = (T0, T0 + timedelta(minutes=15))
    by_node = selectors.heatmap("drift", *window, 300)
    assert by_node.source == "rollup" and by_node.nodes == ["gpu-a", "gpu-b"]
    assert by_node.values[1][:2] == [pytest.approx(0.675, abs=1e-12)] * 2
    assert selectors.heatmap("ib_state", *window, 300).values == [[2, 2, 2]]  # gpu-a only
    wide = selectors.heatmap("nvlink_errors", *window, 900)  # one 15-minute column: sums
    assert wide.values == [[2.0], [2.0]]


def test_node_rollups_are_partitioned_and_expire_with_the_other_rollups(settings) -> None:  # noqa: ANN001
    seed()
    settings.INGEST_ROLLUP_RETENTION_DAYS = 1
    dropped = partitions.drop_expired(now=T0 + timedelta(days=40))
    assert any(name.startswith("ingest_noderollup_p") for name in dropped)
    assert not NodeRollup.objects.exists()


def test_ib_node_steps_total_every_port_of_a_node_per_step_and_follow_rewrites() -> None:
    from ingest.models import IbNodeStep, IbPort
    from ingest.store import IB_TABLE

    seed()  # gpu-a: 2 ports at T0+30 s … T0+600 s, tx 1e9 + 2e9, rx 2e9 + 2e9 per step
    steps = dict(IbNodeStep.objects.filter(node__name="gpu-a").values_list("ts", "bytes"))
    assert steps == {T0 + timedelta(seconds=30 * s): 7e9 for s in range(1, 21)}
    assert not IbNodeStep.objects.filter(node__name="gpu-b").exists()  # no IB ports

    node_id = IbNodeStep.objects.filter(node__name="gpu-a").values_list("node_id", flat=True)[0]
    port = IbPort.objects.create(node_id=node_id, device="mlx5_2", port=1)
    late = T0 + timedelta(seconds=600)  # a third port reports at the last step, in a later cycle
    row = (
        late,
        port.pk,
        node_id,
        5e8,
        5e8,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        5e10,
        4,
        5,
        0,
    )
    insert_rows(IB_TABLE, [row])
    rollups.refresh("ib", late, late)
    assert IbNodeStep.objects.get(node_id=node_id, ts=late).bytes == 8e9
    assert IbNodeStep.objects.get(node_id=node_id, ts=late - timedelta(seconds=30)).bytes == 7e9


def test_the_rollup_statement_gets_its_work_mem_and_the_transaction_gets_its_own_back() -> None:
    seed()
    during: list[str] = []

    def spy(execute, sql, params, many, context):  # noqa: ANN001, ANN202 - Django's wrapper API
        if sql.startswith("INSERT INTO ingest_gpurollup"):
            with connection.cursor() as cursor:
                cursor.execute("SHOW work_mem")
                during.append(cursor.fetchone()[0])
        return execute(sql, params, many, context)

    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL work_mem = '5MB'")
        with connection.execute_wrapper(spy):
            rollups.refresh("gpu", T0, T0 + timedelta(minutes=10))
        cursor.execute("SHOW work_mem")
        after = cursor.fetchone()[0]
    assert (during, after) == ([rollups.REFRESH_WORK_MEM], "5MB")
