"""Acceptance 2: named simulator scenarios through a real Prometheus and ingest raise exactly their alerts.

Each history is written by the simulator at a pinned epoch, backfilled with
promtool, ingested by real ingest and replayed cycle by cycle (every 60 s; busy_healthy every 5 min: the
evaluations' windows cover every stored step). ``busy_healthy`` (every run at line rate, xmit_wait rising with
load on every busy port) must raise no alert at all over 3 h; the congestion
scenarios, one after the other in one history, must raise one ib_congestion
alert each at its scope (a port, a leaf switch, a run) and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import override_settings

from alerts.models import Alert, Evaluation
from ingest.models import Node
from simulator import Cluster, ClusterSpec
from simulator.history import HEALTH_FAMILIES
from simulator.render import renderer_for
from simulator.scenarios import scenario_faults, with_scenario
from tests.alerts.acceptance import Replay, empty_ingest_tables, ingest_history, replay
from tests.support.prometheus import require_prometheus, simulated_prometheus

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]
EPOCH = datetime(2026, 11, 16, 12, 0, tzinfo=UTC)  # pinned: schedules and seeds follow from it
NODES = 24  # two gang slots (16 + 2 nodes): runs side by side, one rail-aligned leaf group
STEP = 30.0
REPLAY_STEP = 60.0
# busy_healthy must raise nothing at all: judging it every 5 min sees every step (see replayed).
BUSY_REPLAY_STEP = 300.0
# The epoch is pinned, the calendar is not: keep ingest from dropping history older than its retention.
PINNED_RETENTION = {
    "INGEST_PROMETHEUS_RETENTION_DAYS": 100_000,
    "INGEST_RAW_RETENTION_DAYS": 100_000,
}
HOUR = 3600.0
GAP = 2700.0  # each 30-minute fault, then 15 minutes to resolve before the next one
CONGESTION = (("ib_congestion", 0.0), ("ib_congestion_leaf", GAP), ("ib_congestion_run", 2 * GAP))
# The other IB fault scenarios, together after those: each on its own port or node.
PORT_FAULTS = ("ib_symbol_errors", "ib_link_flap", "ib_counter_saturated", "ib_straggler")
IB_SCENARIOS = (*CONGESTION, *((name, 3 * GAP) for name in PORT_FAULTS))


#: The key families plus the GPU hardware-health ones.
WITH_HEALTH = ",".join(("key", *HEALTH_FAMILIES))


#: The seed whose busy_healthy schedule fits every scenario at EPOCH + offset (fixed: the epoch is
#: pinned, so it was found once; ``spec_with`` fails loudly if a schedule change breaks it).
SEED = 2


def spec_with(scenarios: tuple[tuple[str, float], ...]) -> ClusterSpec:
    """The busy_healthy cluster of SEED with every scenario at EPOCH + its offset.

    On the busy cluster: the default one lets workloads wait with their slot free, a stall
    that kueue_queue_stalled rightly reports and that is not these scenarios' fault.
    """
    spec = with_scenario(ClusterSpec(nodes=NODES, seed=SEED, epoch=EPOCH), "busy_healthy")
    for name, offset in scenarios:
        spec = with_scenario(spec, name, EPOCH + timedelta(seconds=offset))  # LookupError: no fit
    return spec


def stored_wait() -> dict[str, float]:
    """What ingest stored of xmit_wait: rows, rows the old 1e5 ticks/s rule fired on, the largest share."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE xmit_wait >= 1e5),"
            " max(xmit_wait * 8 / rate), count(DISTINCT ts) FROM ingest_ibhot WHERE rate = 50e9"
        )
        rows, old_rule, share, steps = cursor.fetchone()
    return {"rows": rows, "old_rule": old_rule, "max_share": share, "steps": steps}


def replayed(spec: ClusterSpec, start: float, end: float, workdir: Path, blocker,  # noqa: ANN001
             every: float = REPLAY_STEP, families: str = "key") -> tuple:  # fmt: skip
    """(stored wait, replay, evaluations) of [start, end): served, ingested, replayed from +10 min
    every ``every`` seconds (each evaluation's windows reach back to the previous one's, so a
    longer step still judges every stored step)."""
    cluster = Cluster(spec)
    history = timedelta(seconds=end - start)
    with simulated_prometheus(cluster, workdir, history, STEP, None, families, end, "100y") as prom:
        with blocker.unblock(), override_settings(**PINNED_RETENTION):
            ingest_history(prom)
            try:
                result = replay(start + 600, end - STEP, every)
                leaves = dict(Node.objects.values_list("name", "leaf_switch"))
                return stored_wait(), result, Evaluation.objects.count(), leaves
            finally:
                Alert.objects.all().delete()
                Evaluation.objects.all().delete()
                empty_ingest_tables()


def key(rule: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The (rule, sorted labels) key ``fired`` answers by."""
    return rule, tuple(sorted(labels.items()))


def hurt(spec: ClusterSpec, node: str, t: float) -> dict[str, str]:
    """The attribution labels of an alert on ``node`` begun at ``t``: its run then, pool, GPU."""
    run = next(r for r in Cluster(spec).runs_at(t) if node in r.nodes)
    return {"namespace": run.queue.namespace, "run": run.name, "queue": run.queue.local_queue,
            "pool": "training", "gpu_model": "NVIDIA H100 80GB HBM3"}  # fmt: skip


def fired(
    result: Replay,
) -> dict[tuple[str, tuple[tuple[str, str], ...]], tuple[float, float | None]]:
    """(rule, labels without alertname) → (first firing, resolved) of every alert that fired."""
    return {
        (s.alert.rule, tuple(sorted((k, v) for k, v in s.alert.labels.items() if k != "alertname"))):
            (s.first_firing, s.resolved)
        for s in result.seen.values() if s.first_firing is not None
    }  # fmt: skip


@pytest.fixture(scope="module")
def busy_healthy(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker
) -> Iterator[tuple]:  # noqa: ANN001
    require_prometheus()
    spec = with_scenario(ClusterSpec(nodes=NODES, seed=1, epoch=EPOCH), "busy_healthy")
    end = EPOCH.timestamp()
    yield (
        spec,
        replayed(
            spec,
            end - 3 * HOUR,
            end,
            Path(tmp_path_factory.mktemp("busy")),
            django_db_blocker,
            BUSY_REPLAY_STEP,
            WITH_HEALTH,  # the GPU hardware rules judge it too (healthy: nothing may fire)
        ),
    )


@pytest.fixture(scope="module")
def congestion(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker
) -> Iterator[tuple]:  # noqa: ANN001
    require_prometheus()
    spec = spec_with(IB_SCENARIOS)
    start = EPOCH.timestamp() - 1200
    end = EPOCH.timestamp() + 4 * GAP
    yield (
        spec,
        replayed(spec, start, end, Path(tmp_path_factory.mktemp("congestion")), django_db_blocker),
    )


def test_busy_healthy_runs_every_job_at_line_rate_with_wait_rising_with_load(busy_healthy) -> None:  # noqa: ANN001
    spec, _ = busy_healthy
    cluster = Cluster(spec)
    t = EPOCH.timestamp() - HOUR
    busy = [s for s in (cluster.state(n, t) for n in cluster.nodes) if s.bandwidth == 48e9]
    assert len(busy) >= NODES // 2
    state = busy[0]
    ports = renderer_for(cluster).ports
    before = ports.sample(cluster.state(state.node, t - 60), 0)
    now = ports.sample(state, 0)
    # Quantum units: 8 bytes lost per increment; 2e-5 bytes lost per byte sent, on every busy port.
    assert (now.transmit_wait - before.transmit_wait) == pytest.approx(
        (now.tx_bytes - before.tx_bytes) * 2e-5 / 8, rel=1e-9
    )


def test_busy_healthy_raises_no_alert_at_all_in_3_hours(busy_healthy) -> None:  # noqa: ANN001
    _, (stored, result, evaluations, _) = busy_healthy
    assert fired(result) == {}
    # It was judged: 3 h of IB samples (359 steps: a rate needs the step before), 34 evaluations;
    # the old rule (1e5 "ticks"/s) fired on every busy row, and the largest share lost is the
    # load's 2e-5 × 48 GB/s × jitter ÷ 50 GB/s.
    assert (stored["steps"], evaluations) == (359, 34)
    assert stored["old_rule"] > stored["rows"] / 3
    assert 1.9e-5 < stored["max_share"] < 2.0e-5
    assert scenario_faults("busy_healthy", busy_healthy[0]) == []


def test_each_congestion_scenario_raises_one_alert_at_its_scope_and_nothing_else(
    congestion,
) -> None:  # noqa: ANN001
    spec, (_, result, _, leaves) = congestion
    port, leaf, run = spec.faults[:3]
    anchors = [EPOCH.timestamp() + offset for _, offset in CONGESTION]
    leaf_name = "ib-leaf-01-rail3"
    run_name = next(r for r in Cluster(spec).runs_at(anchors[2]) if set(r.nodes) == set(run.nodes))
    node, device = port.nodes[0], f"mlx5_{port.ports[0]}"
    expected = {
        key("ib_congestion", device=device, leaf_switch="ib-leaf-01-rail4", node=node, port="1",
            severity="warning", **hurt(spec, node, anchors[0])): anchors[0],
        key("ib_congestion", leaf_switch=leaf_name, severity="warning"): anchors[1],
        key("ib_congestion", namespace=run_name.queue.namespace, run=run_name.name,
            severity="warning"): anchors[2],
    }  # fmt: skip
    got = fired(result)
    assert set(got) == set(expected) | set(other_ib_faults(spec, leaves))
    for scope, anchor in expected.items():
        first, resolved = got[scope]
        # for = 5 min, plus one ingest step to cross, plus one replay step; resolves within keep_firing_for.
        assert anchor + 300 <= first <= anchor + 300 + STEP + REPLAY_STEP, (scope, first - anchor)
        assert (
            resolved is not None
            and anchor + 1800 <= resolved <= anchor + 1800 + 120 + STEP + REPLAY_STEP
        )
    assert (len(leaf.nodes), tuple(leaf.ports), tuple(run.ports)) == (NODES, (3,), ())


def other_ib_faults(spec: ClusterSpec, leaves: dict[str, str]) -> dict:
    """The alert each of the other IB fault scenarios must raise (rule, labels) → fault start
    (``leaves``: each node's leaf switch as ingest stored it, which straggler alerts carry)."""
    symbols, flap, saturated, straggler = spec.faults[3:]
    node = symbols.nodes[0]
    assert {flap.nodes[0], saturated.nodes[0]} == {node}  # one node of the run, distinct ports

    def port(rule: str, index: int, severity: str, fault) -> tuple:  # noqa: ANN001
        return key(rule, device=f"mlx5_{index}", leaf_switch=f"ib-leaf-01-rail{index}", node=node,
                   port="1", severity=severity, **hurt(spec, node, fault.start.timestamp()))  # fmt: skip

    slow = straggler.nodes[0]
    return {
        port("ib_port_errors", 2, "critical", symbols): symbols.start.timestamp(),
        port("ib_link_flap", 5, "critical", flap): flap.start.timestamp(),
        port("ib_counter_saturated", 1, "warning", saturated): saturated.start.timestamp(),
        key("ib_straggler", node=slow, severity="warning", leaf_switch=leaves[slow],
            **hurt(spec, slow, straggler.start.timestamp())): straggler.start.timestamp(),
    }  # fmt: skip


def test_the_other_ib_fault_scenarios_raise_their_alert_at_their_port_or_node(congestion) -> None:  # noqa: ANN001
    spec, (_, result, _, leaves) = congestion
    got = fired(result)
    assert [kind for kind in (f.kind for f in spec.faults[3:])] == list(PORT_FAULTS[:2]) + [
        "ib_counter_saturated", "ib_straggler"]  # fmt: skip
    for scope, start in other_ib_faults(spec, leaves).items():
        # Each fires within the first 6 minutes of its fault (straggler: for = 5 min).
        assert start <= got[scope][0] <= start + 300 + STEP + REPLAY_STEP, (
            scope,
            got[scope][0] - start,
        )
