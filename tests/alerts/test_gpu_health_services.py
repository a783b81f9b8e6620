"""GPU hardware rules over ingest's tables on real Postgres: health rows, gone GPUs, the verdict."""

from __future__ import annotations

import pytest

from alerts.hardware import hardware_verdicts
from alerts.models import Alert
from alerts.services import evaluate
from ingest.store import GPU_SAMPLE_TABLE, insert_rows
from tests.alerts import seed

pytestmark = pytest.mark.django_db
NOW = 1_795_000_000.0  # pinned (a multiple of 30 s)
HOUR = 3600.0


def health_rows(
    node, start: float, end: float, gpus: range = range(8), **health: float
) -> list[tuple]:  # noqa: ANN001
    """Full-width GpuSample rows (value columns healthy, health columns ``health`` else 0)."""
    columns = (
        "ecc_dbe_vol",
        "pcie_replay",
        "row_remap_failure",
        "row_remap_pending",
        "clock_events",
    )
    rows = [row for row in seed.gpu_rows(node, start, end) if row[2] in gpus]
    return [(*row, *(health.get(c, 0.0) for c in columns)) for row in rows]


@pytest.fixture
def nodes() -> dict:
    made = seed.nodes(["gpu-001", "gpu-002", "gpu-003"], ports=0)
    seed.run("llama", made.values(), NOW - 3 * HOUR, NOW + HOUR)
    return made


def firing() -> set[tuple[str, str, str]]:
    return {(a.rule, a.node, a.labels["gpu"]) for a in Alert.objects.filter(state="firing")}


def test_health_rows_raise_their_rules_and_the_nodes_verdicts(nodes: dict) -> None:
    a, b, c = nodes["gpu-001"], nodes["gpu-002"], nodes["gpu-003"]
    start = NOW - 900
    insert_rows(GPU_SAMPLE_TABLE, [
        *health_rows(a, start, NOW, range(1, 8), clock_events=0x04),  # power cap only: healthy
        *health_rows(a, start, NOW, range(1), row_remap_failure=1.0),
        *health_rows(b, start, NOW, range(0, 4), clock_events=0x40),
        *health_rows(b, start, NOW, range(4, 5), ecc_dbe_vol=2.0),
        *health_rows(b, start, NOW, range(5, 8)),
        *health_rows(c, start, NOW, range(0, 7), pcie_replay=0.0),
        *health_rows(c, start, NOW, range(7, 8), pcie_replay=6.0),  # 12 a minute
    ])  # fmt: skip
    seed.cover(NOW)
    evaluate(now=NOW)
    assert firing() == {
        ("gpu_row_remap_failure", "gpu-001", "0"),
        *(("gpu_throttle", "gpu-002", str(g)) for g in range(4)),
        ("gpu_ecc_dbe", "gpu-002", "4"),
        ("gpu_pcie_replay", "gpu-003", "7"),
    }
    verdicts = hardware_verdicts()
    assert {node: v.verdict for node, v in verdicts.items()} == {
        "gpu-001": "needs_rma", "gpu-002": "needs_reset", "gpu-003": "degraded"}  # fmt: skip
    assert verdicts["gpu-002"].reasons == (
        "gpu_ecc_dbe GPU 4", *(f"gpu_throttle GPU {g}" for g in range(4)))  # fmt: skip


def test_xid_79_fires_while_the_gpu_is_absent_for_hours_and_resolves_when_it_returns(
    nodes: dict,
) -> None:
    node, event = nodes["gpu-001"], NOW - 3 * HOUR
    # GPU 2 reports until the event, then 5 min of stale look-back samples, then nothing.
    seed.write_gpu(seed.gpu_rows(node, event - 1800, NOW, gpus=2))
    seed.write_gpu([r for r in seed.gpu_rows(node, event - 1800, event + 300) if r[2] == 2])
    seed.xid(node, 2, event, 79)
    for at in (event + 600, event + HOUR + 600, NOW - 60):  # past the 1 h window: still gone
        seed.cover(at)
        evaluate(now=at)
        assert firing() == {("gpu_xid", "gpu-001", "2")}
    alert = Alert.objects.get()
    assert alert.context["gone"] is True and alert.context["returned_at"] is None
    back = NOW + 30
    seed.write_gpu([r for r in seed.gpu_rows(node, back, back + 60) if r[2] == 2])
    seed.cover(back + 60)
    evaluate(now=back + 60)
    alert.refresh_from_db()
    assert (alert.state, alert.resolved_at) == ("resolved", seed.dt(back))
