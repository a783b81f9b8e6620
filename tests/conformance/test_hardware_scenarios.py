"""Acceptance 3: each GPU hardware scenario through a real Prometheus and ingest raises exactly its alert.

One history (the busy_healthy cluster of ``test_scenarios``, pinned epoch): the five
``gpu_*`` hardware scenarios at once, each on its own GPU, and an XID 79 whose GPU stays
gone for 3 h 5 min. Replayed every 5 minutes (each evaluation's windows reach back to the
previous one's), the alerts that fire must be exactly one per scenario at its GPU, and the
XID 79 alert must still fire after 3 h and resolve only once the GPU reports again.
(busy_healthy, which emits every health field healthy, raises nothing: ``test_scenarios``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from simulator import Cluster, ClusterSpec, FaultKind
from simulator.scenarios import with_scenario
from tests.conformance.test_scenarios import (
    EPOCH,
    NODES,
    SEED,
    STEP,
    WITH_HEALTH,
    fired,
    hurt,
    replayed,
)
from tests.support.prometheus import require_prometheus

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]
HOUR = 3600.0
GONE = 3 * HOUR + 300  # the XID 79 GPU is back 3 h 5 min after the event
REPLAY_STEP = 300.0
#: rule (= fault kind) → (severity, seconds from the fault's start to firing, ... from its end to resolving)
EXPECTED = {
    FaultKind.GPU_ECC_DBE: ("critical", 0, 90),
    FaultKind.GPU_ROW_REMAP_FAILURE: ("critical", 0, 90),
    FaultKind.GPU_ROW_REMAP_PENDING: ("warning", 0, 90),
    FaultKind.GPU_THROTTLE: ("warning", 300, 60 + 90),
    FaultKind.GPU_PCIE_REPLAY: ("warning", 80, 300),
}


def hardware_spec() -> ClusterSpec:
    spec = with_scenario(ClusterSpec(nodes=NODES, seed=SEED, epoch=EPOCH), "busy_healthy")
    for kind in FaultKind.HARDWARE:
        spec = with_scenario(spec, kind)
    spec = with_scenario(spec, FaultKind.XID)
    xid = replace(spec.faults[-1], end=EPOCH + timedelta(seconds=GONE))
    return replace(spec, faults=[*spec.faults[:-1], xid])


@pytest.fixture(scope="module")
def hardware(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker
) -> Iterator[tuple]:  # noqa: ANN001
    require_prometheus()
    spec = hardware_spec()
    start, end = EPOCH.timestamp() - 900, EPOCH.timestamp() + GONE + 900
    workdir = Path(tmp_path_factory.mktemp("hardware"))
    yield spec, replayed(spec, start, end, workdir, django_db_blocker, REPLAY_STEP, WITH_HEALTH)


def test_each_hardware_scenario_raises_its_alert_at_its_gpu_and_nothing_else(hardware) -> None:  # noqa: ANN001
    spec, (_, result, _, leaves) = hardware
    faults = {f.kind: f for f in spec.faults}
    got = fired(result)

    def labels(fault, gpu: str, severity: str) -> tuple:  # noqa: ANN001
        """The alert's labels: its GPU, node, severity and attribution (``hurts``) then."""
        node = fault.nodes[0]
        return tuple(sorted({"gpu": gpu, "node": node, "severity": severity,
                             "leaf_switch": leaves[node], **attribution(spec, node, fault)}.items()))  # fmt: skip

    expected = {
        (kind, labels(faults[kind], str(faults[kind].gpus[0]), severity)): kind
        for kind, (severity, _, _) in EXPECTED.items()
    }
    xid = faults[FaultKind.XID]
    xid_key = ("gpu_xid", labels(xid, "2", "critical"))
    assert set(got) == set(expected) | {xid_key}
    for key, kind in expected.items():
        first, resolved = got[key]
        start, end = faults[kind].start.timestamp(), faults[kind].end.timestamp()
        _, fire_after, resolve_after = EXPECTED[kind]
        assert start + fire_after <= first <= start + fire_after + STEP + REPLAY_STEP, (
            kind,
            first - start,
        )
        assert resolved is not None and end <= resolved <= end + resolve_after + STEP + REPLAY_STEP, (
            kind, None if resolved is None else resolved - end)  # fmt: skip


def attribution(spec, node: str, fault) -> dict[str, str]:  # noqa: ANN001
    """``hurt`` where a run holds the node when the fault starts, else pool and GPU model."""
    t = fault.start.timestamp()
    if any(node in run.nodes for run in Cluster(spec).runs_at(t)):
        return hurt(spec, node, t)
    return {"pool": "training", "gpu_model": "NVIDIA H100 80GB HBM3"}


def test_xid_79_keeps_firing_while_the_gpu_is_gone_and_resolves_when_it_returns(hardware) -> None:  # noqa: ANN001
    spec, (_, result, _, _) = hardware
    xid = next(f for f in spec.faults if f.kind == FaultKind.XID)
    (seen,) = result.of("gpu_xid", node=xid.nodes[0], gpu="2")
    start, back = xid.start.timestamp(), xid.end.timestamp()
    assert start <= seen.first_firing <= start + STEP + REPLAY_STEP
    # Firing all along: resolved only after the GPU is back (3 h 5 min), within one replay step.
    assert seen.resolved is not None and back <= seen.resolved <= back + STEP + REPLAY_STEP
    assert seen.resolved - seen.first_firing > 3 * HOUR
    assert (seen.alert.value, seen.alert.context["gone"]) == (79.0, True)
