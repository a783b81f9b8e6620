"""kube-state-metrics pod reasons (fixtures/ksm_reasons_*.prom) → real Prometheus → run events.

Scrape ``a`` (5 min): two Running pods of Job llama-70b. Scrape ``b``: worker-0's node is
lost (kube_pod_status_reason NodeLost), worker-1 restarted after an OOM kill
(last_terminated_reason OOMKilled), a new worker-2 was refused by the kubelet
(UnexpectedAdmissionError) and Failed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ingest.runs_normalize import EVENT_OF_POD_REASON
from runs.models import RunEvent
from tests.conformance.scrapes import T0, Scrape, at, backfilled, ingest
from tests.support.prometheus import PrometheusProcess
from tests.support.timeseries import truncate_timeseries

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def ksm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    target = ("kube-state-metrics", "10.42.0.5:8080")
    scrapes = [
        Scrape("ksm_reasons_a.prom", T0, T0 + 300, *target),
        Scrape("ksm_reasons_b.prom", T0 + 300, T0 + 600, *target),
    ]
    with backfilled(tmp_path_factory.mktemp("ksm_reasons"), scrapes) as prometheus:
        yield prometheus


def test_each_pod_reason_is_a_run_event_with_the_reason(ksm: PrometheusProcess) -> None:
    truncate_timeseries()
    ingest(ksm, ["runs"], T0 + 60, T0 + 570)
    events = RunEvent.objects.order_by("ts", "kind", "pod").values_list(
        "ts", "kind", "pod", "detail"
    )
    assert list(events) == [
        (at(T0 + 60), "started", "", "running when first seen"),
        (at(T0 + 300), "node_lost", "llama-70b-worker-0", "NodeLost"),
        (at(T0 + 300), "rejected", "llama-70b-worker-2", "UnexpectedAdmissionError"),
        (
            at(T0 + 300),
            "restart",
            "llama-70b-worker-1",
            "restart count 1; last terminated: OOMKilled",
        ),
    ]


def test_only_reasons_kube_state_metrics_emits_are_mapped() -> None:
    # internal/store/pod.go podStatusReasons (v2.20.0) + "Other" for an unlisted status reason.
    assert set(EVENT_OF_POD_REASON) == {
        "Evicted", "NodeAffinity", "NodeLost", "PreemptionByScheduler", "SchedulingGated",
        "Shutdown", "TerminationByKubelet", "UnexpectedAdmissionError", "Other",
    }  # fmt: skip
