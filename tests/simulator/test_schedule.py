"""A seed is the same cluster around its epoch at any time of day (the schedule follows the epoch).

Fixtures rely on it: they place faults on a fixed seed's runs (no seed search at run time),
so the runs, reboots and node states relative to the epoch must not depend on the hour.
"""

from __future__ import annotations

from datetime import UTC, datetime

from simulator import Cluster, ClusterSpec
from simulator.render import renderer_for
from tests.support.fixtures import INTEGRATION_SEED, integration_cluster

#: An epoch that is on no round boundary, to compare the fixed epochs against.
REFERENCE = datetime(2025, 7, 9, 17, 13, 30, tzinfo=UTC)
HOUR = 3600.0
OFFSETS = [k * 30.0 for k in range(-4 * 120, 2 * 120, 7)]  # every 3.5 min, 4 h back to 2 h on


def relative_runs(cluster: Cluster) -> list[tuple[object, ...]]:
    """Every run of the 6 h around the epoch, its times relative to the epoch."""
    epoch = cluster.spec.epoch_seconds
    runs = []
    for schedule in cluster.schedules:
        first, last = schedule.index_at(epoch - 4 * HOUR), schedule.index_at(epoch + 2 * HOUR)
        for k in range(first, last + 1):
            run = schedule.run(k)
            if run is not None:
                runs.append((run.name, run.nodes, round(run.queued_at - epoch, 3),
                             round(run.admitted_at - epoch, 3), round(run.end - epoch, 3),
                             run.outcome, run.period, run.checkpoint_seconds))  # fmt: skip
    return runs


def relative_states(cluster: Cluster) -> list[tuple[object, ...]]:
    """What every node does at each offset from the epoch."""
    epoch = cluster.spec.epoch_seconds
    states = []
    for offset in OFFSETS:
        for node in cluster.nodes:
            s = cluster.state(node, epoch + offset)
            states.append((node.name, offset, s.tick, s.pool, s.run.name if s.run else None,
                           round(s.activity, 9), round(s.boot - epoch, 3)))  # fmt: skip
    return states


def test_a_seed_gives_the_same_cluster_around_any_epoch(fixed_epoch: datetime) -> None:
    at_epoch = Cluster(ClusterSpec(nodes=32, seed=INTEGRATION_SEED, epoch=fixed_epoch))
    reference = Cluster(ClusterSpec(nodes=32, seed=INTEGRATION_SEED, epoch=REFERENCE))
    runs = relative_runs(at_epoch)
    assert len(runs) >= 4
    assert runs == relative_runs(reference)
    assert relative_states(at_epoch) == relative_states(reference)


def test_the_fixtures_fixed_seeds_fit_at_every_epoch(fixed_epoch: datetime) -> None:
    epoch = fixed_epoch.timestamp()
    # scenario_prometheus: every integration fault finds its run (LookupError otherwise).
    assert len(integration_cluster(fixed_epoch).spec.faults) == 15
    # tests/ingest/test_coverage_integration.py: seed 3 has checkpoints all through its history.
    renderer = renderer_for(Cluster(ClusterSpec(nodes=8, seed=3, epoch=fixed_epoch)))
    assert all(renderer._checkpoints(t) for t in (epoch - 600, epoch))
    # tests/browser/test_hostile_labels.py: seed 1's hostile slot runs a job 20 min back.
    hostile = Cluster(ClusterSpec(nodes=8, seed=1, epoch=fixed_epoch, hostile_label="<x>"))
    assert any(run.name.startswith("<x>") for run in hostile.runs_at(epoch - 1200))
