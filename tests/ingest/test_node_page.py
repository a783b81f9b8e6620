"""The node page's one-round-trip read of both families equals the per-family selectors."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ingest import node_page, selectors
from ingest.models import IbPort, IngestCursor, Node, PoolChange, XidEvent
from ingest.selectors.series import node_plan
from runs import selectors as run_selectors
from runs.models import Job, Pod, PodAssignment
from tests.ingest.test_node_tiles import PRESENCE, T0, WINDOWS, write_as_ingest

pytestmark = pytest.mark.django_db
END = T0 + timedelta(hours=4)
# (start, end, step) as the node page asks: 6 h, 24 h, 7 d up to the data's end (6 h and
# 24 h off the 5-minute grid too), and the tiles test's windows at 5-minute and 1-minute steps.
SPANS = [
    (END - timedelta(hours=6), END, 60),
    (END - timedelta(hours=6, minutes=2), END - timedelta(minutes=2), 60),
    (END - timedelta(hours=24), END, 120),
    (END - timedelta(hours=24, seconds=90), END - timedelta(seconds=90), 300),
    (END - timedelta(days=7), END, 600),
    *[(start, end, step) for start, end in WINDOWS for step in (300, 60)],
]


@pytest.fixture(autouse=True)
def keep_tiles(settings) -> None:  # noqa: ANN001
    """T0 is long past: the tiles' retention reaches back to it."""
    settings.INGEST_NODE_TILE_RETENTION_DAYS = 100 * 365


def per_family(node: str, start, end, step: int, tiles: bool = True) -> tuple:  # noqa: ANN001
    return (
        selectors.node_gpu_series(node, start, end, step, tiles),
        selectors.node_ib_series(node, start, end, step, tiles),
    )


def test_both_families_in_one_read_equal_the_selectors_exactly() -> None:
    write_as_ingest()
    for node in PRESENCE:
        for start, end, step in SPANS:
            for tiles in (True, False):
                expected = per_family(node, start, end, step, tiles)
                assert node_page.node_series(node, start, end, step, tiles) == expected, (
                    node, start, end, step, tiles,
                )  # fmt: skip
    # The spans find data: gpu-a's GPUs and ports over 6 h, in 5-minute columns from the tiles.
    gpus, ports = node_page.node_series("gpu-a", *SPANS[0])
    assert list(gpus.series) == ["0", "1"] and list(ports.series) == ["mlx5_0", "mlx5_1"]
    assert (gpus.step, gpus.source, len(gpus.times)) == (300, "rollup", 72)
    assert gpus.series["0"]["power"][24:71] == [300.0] * 47  # the 4 h of data end the window
    assert node_plan(*SPANS[0], True).tiled and not node_plan(*SPANS[4], True).tiled


def test_without_a_cursor_both_families_read_the_rollups() -> None:
    write_as_ingest()
    IngestCursor.objects.filter(family="ib").delete()
    start, end, step = SPANS[0]
    gpus, ports = node_page.node_series("gpu-b", start, end, step)
    assert (gpus, ports) == per_family("gpu-b", start, end, step, False)
    assert list(ports.series) == ["mlx5_0"]


def orm_facts(name: str, start, end) -> tuple:  # noqa: ANN001
    """What the node page read with the ORM, one query each, before ``node_facts``."""
    node = Node.objects.get(name=name)
    xids = XidEvent.objects.filter(node=node, ts__gte=start, ts__lt=end).order_by("ts", "gpu")
    return (
        model_fields(node),
        [model_fields(p) for p in IbPort.objects.filter(node=node)],
        [model_fields(c) for c in PoolChange.objects.filter(node=node).order_by("-ts")[:10]],
        [(x.ts, x.gpu, x.code, x.message) for x in xids[:500]],
    )


def model_fields(row: object) -> dict:
    return {k: v for k, v in vars(row).items() if k != "_state"}


def test_node_facts_are_what_the_orm_reads_one_query_each_and_runs_come_from_runs() -> None:
    ids = write_as_ingest()
    node = Node.objects.get(pk=ids["gpu-b"])
    job = Job.objects.create(namespace="ml", name="train-<b>")
    for k in range(60):  # 50 newest runs of 60, one pod without a job
        pod = Pod.objects.create(namespace="ml", name=f"pod-{k}", job=None if k == 59 else job)
        seen = T0 + timedelta(minutes=k, microseconds=500 * k)
        PodAssignment.objects.create(pod=pod, node=node, first_seen=seen, last_seen=seen)
    for k in range(12):  # the 10 latest pool changes
        PoolChange.objects.create(node=node, ts=T0 + timedelta(hours=k), pool="inference")
    for minute in (-5, 0, 30, 239, 240):  # [T0, END): three of them
        XidEvent.objects.create(node=node, gpu=minute % 2, ts=T0 + timedelta(minutes=minute),
                                code=79, message="GPU has fallen off the bus")  # fmt: skip
    facts = node_page.node_facts("gpu-b", T0, END)
    assert facts is not None
    got = (
        model_fields(facts.node),
        [model_fields(p) for p in facts.ports],
        [model_fields(c) for c in facts.pool_changes],
        facts.xids,
    )
    assert got == orm_facts("gpu-b", T0, END)
    assert [len(part) for part in got[1:]] == [2, 10, 3]
    runs = run_selectors.runs_on_node(node.pk)  # the page's runs: the runs app's selector
    assert [(r["pod"], r["job"]) for r in runs[:2]] == [("pod-59", None), ("pod-58", "train-<b>")]
    assert len(runs) == 50 and runs[-1]["pod"] == "pod-10"
    assert facts.cursors == dict(IngestCursor.objects.values_list("family", "covered_until"))
    assert set(facts.cursors) == {"gpu", "ib"}
    assert node_page.node_facts("gpu-none", T0, END) is None
