"""Runs beyond batch Jobs: pods of a JobSet, PyTorchJob, MPIJob, RayJob, LeaderWorkerSet → one run each."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ingest.prometheus import PrometheusClient, Series
from ingest.runs_normalize import RunsData, add_pod_info, pod_workloads
from ingest.sources.base import Window
from ingest.sources.runs import RunsSource
from ingest.stepseries import to_datetime
from runs.models import Job, Pod
from simulator import Cluster, ClusterSpec, Dialect, ExporterOptions
from tests.support.prometheus import require_prometheus, simulated_prometheus

T, STEP = 1_700_000_010.0, 30.0


def info(pod: str, kind: str, owner: str, node: str = "gpu-001", ns: str = "ml") -> Series:
    labels = {"namespace": ns, "pod": pod, "node": node, "created_by_kind": kind,
              "created_by_name": owner}  # fmt: skip
    return Series(labels, [(T, 1.0), (T + STEP, 1.0)])


def pod_labels(pod: str, ns: str = "ml", **labels: str) -> Series:
    return Series({"namespace": ns, "pod": pod, **labels}, [(T, 1.0)])


def runs_of(infos: list[Series], labels: list[Series]) -> dict[tuple[str, str], str]:
    """(namespace, run) → kind, and each pod's run, after normalisation."""
    data = RunsData()
    add_pod_info(data, infos, STEP, pod_workloads(labels))
    return {key: job.kind for key, job in data.jobs.items()} | {
        ("pod", key[1]): pod.job[1] for key, pod in data.pods.items()
    }


def test_each_controller_s_pods_are_one_run_of_the_top_level_workload() -> None:
    infos = [
        info("llama-workers-0-0", "Job", "llama-workers-0"),  # JobSet child Jobs
        info("llama-workers-1-0", "Job", "llama-workers-1", node="gpu-002"),
        info("bert-master-0", "PyTorchJob", "bert"),
        info("bert-worker-0", "PyTorchJob", "bert", node="gpu-003"),
        info("mpi-launcher-x", "Job", "mpi-launcher"),  # an MPIJob's launcher Job
        info("mpi-worker-0", "MPIJob", "mpi"),
        info("ray-head-x", "RayCluster", "rl-raycluster-abcde"),
        info("ray-worker-y", "RayCluster", "rl-raycluster-abcde"),
        info("scratch-head", "RayCluster", "scratch"),  # a RayCluster made by hand
        info("serve-0", "StatefulSet", "serve-0"),  # LeaderWorkerSet group 0
        info("serve-0-1", "StatefulSet", "serve-0"),
        info("postgres-0", "StatefulSet", "postgres"),  # not a training workload
        info("plain-0", "Job", "plain"),  # a batch Job, no controller labels
    ]
    labels = [
        pod_labels("llama-workers-0-0", label_jobset_sigs_k8s_io_jobset_name="llama"),
        pod_labels("llama-workers-1-0", label_jobset_sigs_k8s_io_jobset_name="llama"),
        pod_labels("bert-master-0", label_training_kubeflow_org_job_name="bert"),
        pod_labels("bert-worker-0", label_training_kubeflow_org_job_name="bert"),
        pod_labels("mpi-launcher-x", label_training_kubeflow_org_job_name="mpi"),
        pod_labels("mpi-worker-0", label_training_kubeflow_org_job_name="mpi"),
        pod_labels("ray-head-x", label_ray_io_cluster="rl-raycluster-abcde",
                   label_ray_io_originated_from_cr_name="rl", label_ray_io_originated_from_crd="RayJob"),
        pod_labels("ray-worker-y", label_ray_io_cluster="rl-raycluster-abcde",
                   label_ray_io_originated_from_cr_name="rl", label_ray_io_originated_from_crd="RayJob"),
        pod_labels("scratch-head", label_ray_io_cluster="scratch"),
        pod_labels("serve-0", label_leaderworkerset_sigs_k8s_io_name="serve"),
        pod_labels("serve-0-1", label_leaderworkerset_sigs_k8s_io_name="serve"),
        pod_labels("postgres-0", label_app="postgres"),
        pod_labels("plain-0"),
    ]  # fmt: skip
    found = runs_of(infos, labels)
    runs = {k: v for k, v in found.items() if k[0] != "pod"}
    assert runs == {
        ("ml", "llama"): "JobSet", ("ml", "bert"): "PyTorchJob", ("ml", "mpi"): "MPIJob",
        ("ml", "rl"): "RayJob", ("ml", "scratch"): "RayCluster", ("ml", "serve"): "LeaderWorkerSet",
        ("ml", "plain"): "Job",
    }  # fmt: skip
    assert ("pod", "postgres-0") not in found
    assert {found[("pod", p)] for p in ("mpi-launcher-x", "mpi-worker-0")} == {"mpi"}


def test_without_the_labels_allowlisted_pods_stay_runs_of_their_controller() -> None:
    found = runs_of([info("llama-workers-0-0", "Job", "llama-workers-0")], [])
    assert found[("ml", "llama-workers-0")] == "Job"


EPOCH = datetime(2026, 11, 16, 12, 0, tzinfo=UTC)  # pinned: the schedule follows from it
EPOCH_STEP = 30


@pytest.mark.prometheus
@pytest.mark.django_db
def test_a_jobset_launched_run_is_one_run_through_prometheus_and_ingest(tmp_path) -> None:  # noqa: ANN001
    require_prometheus()
    end = EPOCH.timestamp()
    options = ExporterOptions(dialects=frozenset({Dialect.KSM, Dialect.KUEUE}))
    spec = ClusterSpec(nodes=24, seed=1, epoch=EPOCH, exporters=options,
                       jobset_queues=("cq-pretrain",))  # fmt: skip
    cluster = Cluster(spec)
    t = end - 300
    launched = [r for r in cluster.runs_at(t) if r.queue.cluster_queue == "cq-pretrain"]
    run = launched[0]  # the pinned epoch and seed run one pretrain job then
    history = timedelta(minutes=10)
    with simulated_prometheus(cluster, tmp_path, history, STEP, None, "all", end, "100y") as prom:
        source = RunsSource()
        window = Window(to_datetime(prom.start), to_datetime(end - STEP), EPOCH_STEP)
        source.store(source.pull(PrometheusClient(prom.prometheus.url), window))
    job = Job.objects.get(namespace=run.queue.namespace, name=run.name)
    assert (job.kind, job.local_queue) == ("JobSet", run.queue.local_queue)
    pods = Pod.objects.filter(job=job)
    assert sorted(pods.values_list("name", flat=True)) == sorted(
        f"{run.name}-workers-0-{i}" for i in range(len(run.nodes))
    )
    # No run is named after the child Job.
    assert not Job.objects.filter(name=f"{run.name}-workers-0").exists()
