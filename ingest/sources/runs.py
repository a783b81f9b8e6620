"""Runs: jobs → pods → nodes over time, LocalQueue, phase, restarts and run events.

A run is a top-level workload: a Kubernetes Job (namespace + ``created_by_name`` of its
pods), or the JobSet, Kubeflow job, RayJob / RayCluster or LeaderWorkerSet the controllers'
pod labels name (``runs_normalize.pod_workloads``). A pod's
stay on a node is one ``runs.models.PodAssignment`` whose ``last_seen`` is extended while the
pod is seen there at consecutive steps; a gap or a move starts a new row. A rise
of the restart count is a ``restart`` RunEvent (the runs page's "crash") at the
step it was observed. ``Job.cluster_queue`` comes from ``INGEST_LOCAL_QUEUE_MAP``
("namespace/local-queue" or "local-queue" → ClusterQueue name), else from a
ClusterQueue named like the LocalQueue: Kueue exports no LocalQueue → ClusterQueue
mapping as metrics. The rows are written through ``runs.store``, the runs app's write API.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings

from runs import store

from .. import queries
from ..dimensions import cluster_queue_ids
from ..models import Family
from ..prometheus import PrometheusClient, Series
from ..runs_normalize import (
    JobKey,
    RunsData,
    add_phases,
    add_pod_info,
    add_queues,
    add_reasons,
    add_restarts,
    pod_workloads,
    terminated_reasons,
)
from ..stepseries import to_datetime
from ..store import upsert_nodes
from .base import Batch, Source, StoreResult, Window
from .rangefetch import fetch, promql


class RunsSource(Source):
    """Jobs, pods, pod → node assignments and run events from kube-state-metrics."""

    family = Family.RUNS

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Fetch the pod series of the window and normalise them into ``RunsData``."""
        batch = Batch(self.family, window, RunsData())
        start, step = window.start.timestamp(), float(window.step)

        def query(name: str) -> list[Series]:
            return fetch(client, promql(self.family, queries.RUNS, name), window, batch)

        data: RunsData = batch.payload
        workloads = pod_workloads(query("pod_workload"))
        batch.skipped += add_pod_info(data, query("pod_info"), step, workloads)
        add_queues(data, query("pod_queue"))
        add_phases(data, query("pod_phase"), start)
        add_restarts(
            data, query("pod_restarts"), start, terminated_reasons(query("pod_terminated"))
        )
        add_reasons(data, query("pod_reason"), start, step)
        batch.unfit.update(data.unfit)
        return batch

    def store(self, batch: Batch) -> StoreResult:
        """Upsert nodes, jobs and pods; extend or add assignments; write new events (``runs.store``)."""
        data: RunsData = batch.payload
        node_ids = upsert_nodes(
            {n: (to_datetime(a), to_datetime(b)) for n, (a, b) in data.nodes.items()}
        )
        job_ids = store.upsert_jobs(
            {
                key: store.JobSeen(
                    to_datetime(j.first), to_datetime(j.last), j.local_queue, j.state, j.kind
                )
                for key, j in data.jobs.items()
            }
        )
        _link_cluster_queues(job_ids, {k: j.local_queue for k, j in data.jobs.items()})
        pod_ids = store.upsert_pods(
            {
                key: store.PodSeen(
                    job_ids.get(p.job),
                    to_datetime(p.first),
                    to_datetime(p.last),
                    p.phase,
                    p.restarts,
                )
                for key, p in data.pods.items()
            }
        )
        rows = store.store_assignments(
            [(pod_ids[pod], node_ids[node], to_datetime(first), to_datetime(last))
             for pod, node, first, last in data.assignments],
            batch.window.step,
        )  # fmt: skip
        rows += store.insert_events(
            [(job_ids[job], to_datetime(ts), kind, pod, detail)
             for (job, ts, kind, pod), detail in data.events.items()],
        )  # fmt: skip
        rows += store.add_started_events(
            {job_ids[key]: to_datetime(ts) for key, ts in data.started_hints.items()}
        )
        return StoreResult(rows=rows)


def cluster_queue_name(namespace: str, local_queue: str, mapping: Mapping[str, str]) -> str:
    """The ClusterQueue a LocalQueue feeds, per the configured map (default: the same name)."""
    return mapping.get(f"{namespace}/{local_queue}") or mapping.get(local_queue) or local_queue


def _link_cluster_queues(job_ids: Mapping[JobKey, int], local_queues: Mapping[JobKey, str]) -> None:
    mapping: Mapping[str, str] = getattr(settings, "INGEST_LOCAL_QUEUE_MAP", {}) or {}
    wanted = {
        job_ids[key]: cluster_queue_name(key[0], lq, mapping)
        for key, lq in local_queues.items()
        if lq and key in job_ids
    }
    queue_ids = cluster_queue_ids(wanted.values())
    store.link_cluster_queues(
        {job: queue_ids[queue] for job, queue in wanted.items() if queue in queue_ids}
    )
