"""deploy/kubernetes: both overlays render, validate and run what docs/scaling.md sizes.

Every object is checked against the Kubernetes OpenAPI schemas (kubernetes-validate, strict:
an unknown field is an error, as ``kubectl apply`` answers by default), the ServiceMonitor and
PrometheusRule against the Prometheus operator's CRD schemas (tests/deploy/fixtures, vendored
with their origin). Then what the schemas cannot know: non-root pods with a read-only root
filesystem, probes on the paths the app serves, every Celery queue consumed, one beat,
migrations before serving, the sizes of docs/scaling.md, a NetworkPolicy with exactly the
ports ClusterWatch needs, settings the app reads and that pass ``manage.py check --deploy``.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate
import pytest
import yaml
from django.conf import settings
from django.urls import resolve

from tests.core.test_docker_compose import _settings_read_from_environment
from tests.support.processes import BASE_DIR

from .manifests import (
    Object,
    container_env,
    of_kind,
    one,
    pod_containers,
    queues_of,
    secret_example,
    worker_nodename,
)

#: The oldest Kubernetes still commonly run, and the newest kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.29.0", kubernetes_validate.utils.latest_version())
FIXTURES = Path(__file__).parent / "fixtures"
CRD_SCHEMAS = {
    "ServiceMonitor": FIXTURES / "servicemonitor-v1.schema.yaml",
    "PrometheusRule": FIXTURES / "prometheusrule-v1.schema.yaml",
}
KINDS = {
    "Namespace": {"clusterwatch"},
    "ServiceAccount": {"clusterwatch"},
    "ConfigMap": {"clusterwatch-settings"},
    "Deployment": {
        "clusterwatch-web",
        "clusterwatch-worker-ingest",
        "clusterwatch-worker-alerts",
        "clusterwatch-worker-notify",
        "clusterwatch-beat",
    },
    "Service": {"clusterwatch-web"},
    "PodDisruptionBudget": {"clusterwatch-web"},
    "Ingress": {"clusterwatch"},
    "NetworkPolicy": {"clusterwatch", "clusterwatch-web", "clusterwatch-notify"},
    "ServiceMonitor": {"clusterwatch"},
    "PrometheusRule": {"clusterwatch"},
}
WORKERS = {
    "clusterwatch-worker-ingest": ("ingest",),
    "clusterwatch-worker-alerts": ("celery", "alerts"),
    "clusterwatch-worker-notify": ("notify",),
}
POD = {"status.podIP": "10.0.0.1"}


def _kinds(objects: list[Object]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for o in objects:
        kinds.setdefault(o["kind"], set()).add(o["metadata"]["name"])
    return kinds


def test_overlays_render_every_object_in_the_namespace(overlay: str, objects: list[Object]) -> None:
    expected = KINDS | (
        {"HorizontalPodAutoscaler": {"clusterwatch-web"}} if overlay == "large" else {}
    )

    assert _kinds(objects) == expected
    namespaced = [o for o in objects if o["kind"] != "Namespace"]
    assert {o["metadata"].get("namespace") for o in namespaced} == {"clusterwatch"}
    assert all(
        o["metadata"]["labels"]["app.kubernetes.io/part-of"] == "clusterwatch" for o in objects
    )


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_object_is_valid_for_kubernetes(objects: list[Object], version: str) -> None:
    core = [o for o in objects if o["kind"] not in CRD_SCHEMAS]

    assert len(core) == len(objects) - len(CRD_SCHEMAS)
    for o in [*core, secret_example()]:
        kubernetes_validate.validate(o, version, strict=True)  # raises naming the field


def test_kubernetes_validation_refuses_an_unknown_field(objects: list[Object]) -> None:
    web = copy.deepcopy(one(objects, "Deployment", "clusterwatch-web"))
    web["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpget"] = {}

    with pytest.raises(kubernetes_validate.ValidationError, match="'httpget' was unexpected"):
        kubernetes_validate.validate(web, KUBERNETES_VERSIONS[-1], strict=True)


def _strict(schema: Any) -> Any:
    """The CRD schema with unknown fields refused (the API server's strict field validation)."""
    if isinstance(schema, dict):
        schema = {key: _strict(value) for key, value in schema.items()}
        open_ended = (
            schema.get("x-kubernetes-preserve-unknown-fields") or "additionalProperties" in schema
        )
        if "properties" in schema and not open_ended:
            schema["additionalProperties"] = False
    elif isinstance(schema, list):
        schema = [_strict(item) for item in schema]
    return schema


def _crd_validator(kind: str) -> jsonschema.Validator:
    schema = _strict(yaml.safe_load(CRD_SCHEMAS[kind].read_text()))
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize("kind", sorted(CRD_SCHEMAS))
def test_prometheus_operator_objects_match_the_crd_schemas(
    objects: list[Object], kind: str
) -> None:
    [instance] = of_kind(objects, kind).values()

    errors = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _crd_validator(kind).iter_errors(instance)
    ]

    assert errors == []


def test_crd_validation_refuses_an_unknown_or_mistyped_field(objects: list[Object]) -> None:
    monitor = copy.deepcopy(one(objects, "ServiceMonitor", "clusterwatch"))
    monitor["spec"]["endpoints"][0]["bearerToken"] = "inline"
    monitor["spec"]["endpoints"][0]["interval"] = 30

    messages = sorted(e.message for e in _crd_validator("ServiceMonitor").iter_errors(monitor))

    assert messages == [
        "30 is not of type 'string'",
        "Additional properties are not allowed ('bearerToken' was unexpected)",
    ]


def _effective(workload: Object, container: Object, field: str) -> Any:
    pod = workload["spec"]["template"]["spec"].get("securityContext", {})
    return container.get("securityContext", {}).get(field, pod.get(field))


def _dockerfile_user() -> str:
    lines = (BASE_DIR / "Dockerfile").read_text().splitlines()
    return [line.split()[1] for line in lines if line.startswith("USER ")][-1]


def test_every_container_runs_non_root_on_a_read_only_root_filesystem(
    objects: list[Object],
) -> None:
    uid, gid = (int(part) for part in _dockerfile_user().split(":"))
    checked = []
    for name, workload in of_kind(objects, "Deployment").items():
        pod = workload["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False, name
        assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (
            uid,
            gid,
        )
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        for _, container in pod_containers(workload):
            assert _effective(workload, container, "runAsNonRoot") is True, (
                name,
                container["name"],
            )
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
            mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
            assert mounts["/tmp"] == "tmp", (name, container["name"])
            assert all("emptyDir" in volumes[volume] for volume in mounts.values())
            checked.append((name, container["name"]))
    assert len(checked) == 10  # 5 workloads, each with one init container


def test_beat_writes_its_schedule_to_an_empty_dir(objects: list[Object]) -> None:
    beat = one(objects, "Deployment", "clusterwatch-beat")
    [container] = beat["spec"]["template"]["spec"]["containers"]

    mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
    assert mounts == {"/tmp": "tmp", "/app/var/beat": "beat-schedule"}
    assert "BEAT_SCHEDULE_DIR" not in container_env(container, objects, secret_example(), POD)
    assert (
        '"${BEAT_SCHEDULE_DIR:-/app/var/beat}/celerybeat-schedule"'
        in (BASE_DIR / "deploy" / "entrypoint.sh").read_text()
    )


def _http_probe(container: Object, probe: str) -> tuple[str, int]:
    get = container[probe]["httpGet"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    return get["path"], ports[get["port"]]


def test_web_probes_the_documented_paths_on_its_port(objects: list[Object]) -> None:
    web = one(objects, "Deployment", "clusterwatch-web")
    [container] = web["spec"]["template"]["spec"]["containers"]

    assert _http_probe(container, "startupProbe") == ("/healthz", 8000)
    assert _http_probe(container, "livenessProbe") == ("/healthz", 8000)
    assert _http_probe(container, "readinessProbe") == ("/readyz?only=postgres,redis", 8000)
    assert (resolve("/healthz").url_name, resolve("/readyz").url_name) == ("healthz", "readyz")
    assert container["args"] == ["web"]
    # /readyz runs up to four checks of READYZ_TIMEOUT_SECONDS each, one after the other.
    assert container["readinessProbe"]["timeoutSeconds"] >= 4 * settings.READYZ_TIMEOUT_SECONDS


def test_workers_are_alive_while_they_answer_a_ping_by_their_node_name(
    objects: list[Object],
) -> None:
    for name, queues in WORKERS.items():
        [container] = one(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"]
        command = container["livenessProbe"]["exec"]["command"]

        assert queues_of(container) == queues
        assert command[:2] == ["sh", "-c"]
        assert (
            command[2]
            == f'exec celery -A config inspect ping --timeout 10 -d "{worker_nodename(queues)}@$HOSTNAME"'
        )
        assert "readinessProbe" not in container and "startupProbe" not in container


def test_beat_has_no_probe_and_is_watched_by_the_heartbeat_rule(objects: list[Object]) -> None:
    [container] = one(objects, "Deployment", "clusterwatch-beat")["spec"]["template"]["spec"][
        "containers"
    ]
    rules = one(objects, "PrometheusRule", "clusterwatch")["spec"]["groups"][0]["rules"]

    assert container["args"] == ["beat"]
    assert not {"livenessProbe", "readinessProbe", "startupProbe"} & container.keys()
    [heartbeat] = [rule for rule in rules if rule.get("alert") == "ClusterWatchHeartbeatStale"]
    assert "clusterwatch_worker_heartbeat_timestamp_seconds" in heartbeat["expr"]


def test_workers_consume_every_queue_of_the_product_once(objects: list[Object]) -> None:
    consumed = [queue for name in WORKERS for queue in queues_of(_main(objects, name))]
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}

    assert sorted(consumed) == sorted(settings.WORKER_QUEUES)
    assert routed | {settings.CELERY_TASK_DEFAULT_QUEUE} == set(consumed)


def _main(objects: list[Object], name: str) -> Object:
    [container] = one(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"]
    return container


def test_beat_is_one_pod_replaced_not_rolled(objects: list[Object]) -> None:
    beat = one(objects, "Deployment", "clusterwatch-beat")

    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}


def test_web_migrates_before_serving_and_the_rest_waits_for_it(objects: list[Object]) -> None:
    for name, workload in of_kind(objects, "Deployment").items():
        [init] = workload["spec"]["template"]["spec"]["initContainers"]
        expected = ["migrate"] if name == "clusterwatch-web" else ["wait-for-migrations"]

        assert init["args"] == expected, name
        assert init["envFrom"] == _main(objects, name)["envFrom"], name


def _resources(container: Object) -> tuple[str, str, str, str]:
    r = container["resources"]
    return r["requests"]["cpu"], r["requests"]["memory"], r["limits"]["cpu"], r["limits"]["memory"]


SIZES = {
    # docs/scaling.md "Sizing" and "Kubernetes": replicas (None: the HPA's), INGEST_SHARDS.
    "small": {"web": 2, "ingest": 1, "alerts": 1, "notify": 1, "shards": "2"},
    "large": {"web": None, "ingest": 4, "alerts": 1, "notify": 1, "shards": "8"},
}


def test_sizes_follow_docs_scaling(overlay: str, objects: list[Object]) -> None:
    size = SIZES[overlay]
    web = one(objects, "Deployment", "clusterwatch-web")
    replicas = {
        component: one(objects, "Deployment", f"clusterwatch-worker-{component}")["spec"][
            "replicas"
        ]
        for component in ("ingest", "alerts", "notify")
    }

    assert web["spec"].get("replicas") == size["web"]
    assert replicas == {c: size[c] for c in ("ingest", "alerts", "notify")}
    assert (
        one(objects, "ConfigMap", "clusterwatch-settings")["data"]["INGEST_SHARDS"]
        == size["shards"]
    )
    # One uvicorn process per pod, 1 core + 384 MB; ingest 1 CPU, 512 MB, limit 1 Gi.
    assert (
        container_env(_main(objects, "clusterwatch-web"), objects, secret_example(), POD)[
            "WEB_CONCURRENCY"
        ]
        == "1"
    )
    assert _resources(_main(objects, "clusterwatch-web")) == ("1", "384Mi", "1", "512Mi")
    assert _resources(_main(objects, "clusterwatch-worker-ingest")) == ("1", "512Mi", "1", "1Gi")
    assert _main(objects, "clusterwatch-worker-ingest")["args"] == [
        "worker",
        "ingest",
        "--concurrency",
        "1",
    ]
    if overlay == "large":
        hpa = one(objects, "HorizontalPodAutoscaler", "clusterwatch-web")
        assert hpa["spec"]["scaleTargetRef"]["name"] == "clusterwatch-web"
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 8)


def test_every_container_has_requests_and_limits(objects: list[Object]) -> None:
    for name, workload in of_kind(objects, "Deployment").items():
        for _, container in pod_containers(workload):
            assert all(_resources(container)), (name, container["name"])


def test_web_allows_its_pod_ip_as_host_for_probes_and_scrapes(objects: list[Object]) -> None:
    environment = container_env(_main(objects, "clusterwatch-web"), objects, secret_example(), POD)

    assert environment["ALLOWED_HOSTS"] == "clusterwatch.example.com,10.0.0.1"


def _ports(rule: Object) -> set[tuple[str, int]]:
    return {(port.get("protocol", "TCP"), port["port"]) for port in rule["ports"]}


def _egress(policy: Object) -> set[tuple[str, int]]:
    return set().union(*(_ports(rule) for rule in policy["spec"].get("egress", [])))


def test_network_policy_opens_only_what_clusterwatch_talks_to(objects: list[Object]) -> None:
    policies = of_kind(objects, "NetworkPolicy")
    everyone, web, notify = (
        policies[n] for n in ("clusterwatch", "clusterwatch-web", "clusterwatch-notify")
    )
    config = one(objects, "ConfigMap", "clusterwatch-settings")["data"]
    secret = secret_example()["stringData"]
    url_ports = {
        urlsplit(url).port
        for url in (config["PROMETHEUS_URL"], secret["DATABASE_URL"], secret["REDIS_URL"])
    }

    assert everyone["spec"]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/name": "clusterwatch"}
    }
    assert everyone["spec"]["ingress"] == []
    assert _egress(everyone) == {
        ("UDP", 53),
        ("TCP", 53),
        ("TCP", 5432),
        ("TCP", 6379),
        ("TCP", 9090),
    }
    assert url_ports == {9090, 5432, 6379}
    assert all("to" not in rule for rule in everyone["spec"]["egress"])
    assert web["spec"]["policyTypes"] == ["Ingress"]
    assert [_ports(rule) for rule in web["spec"]["ingress"]] == [{("TCP", 8000)}]
    assert (
        notify["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        == "worker-notify"
    )
    assert notify["spec"]["policyTypes"] == ["Egress"] and _egress(notify) == {
        ("TCP", 443),
        ("TCP", 9093),
    }
    assert (
        one(objects, "Deployment", "clusterwatch-worker-notify")["spec"]["template"]["metadata"][
            "labels"
        ]["app.kubernetes.io/component"]
        == "worker-notify"
    )


def test_service_monitor_scrapes_metrics_of_the_web_service_with_the_secret_token(
    objects: list[Object],
) -> None:
    monitor = one(objects, "ServiceMonitor", "clusterwatch")["spec"]
    service = one(objects, "Service", "clusterwatch-web")
    [endpoint] = monitor["endpoints"]

    assert monitor["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert (endpoint["path"], resolve(endpoint["path"]).url_name) == ("/metrics", "metrics")
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": "clusterwatch-secrets", "key": "METRICS_TOKEN"},
    }
    assert secret_example()["metadata"]["name"] == "clusterwatch-secrets"
    assert "METRICS_TOKEN" in secret_example()["stringData"]


def test_ingress_routes_to_the_web_service(objects: list[Object]) -> None:
    ingress = one(objects, "Ingress", "clusterwatch")["spec"]
    [rule] = ingress["rules"]
    [path] = rule["http"]["paths"]
    service = one(objects, "Service", "clusterwatch-web")

    assert path["backend"]["service"] == {"name": "clusterwatch-web", "port": {"name": "http"}}
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http"}]
    assert rule["host"] in one(objects, "ConfigMap", "clusterwatch-settings")["data"][
        "ALLOWED_HOSTS"
    ].split(",")


def test_config_map_and_secret_set_only_settings_the_app_reads(objects: list[Object]) -> None:
    read = _settings_read_from_environment()
    config = one(objects, "ConfigMap", "clusterwatch-settings")["data"]
    secret = secret_example()

    assert config.keys() <= read, sorted(config.keys() - read)
    assert secret["stringData"].keys() <= read, sorted(secret["stringData"].keys() - read)
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "METRICS_TOKEN"} <= secret[
        "stringData"
    ].keys()
    assert not config.keys() & secret["stringData"].keys()
    placeholders = [v for v in secret["stringData"].values() if v and "REPLACE" not in v]
    assert placeholders == [
        "redis://redis.clusterwatch.svc:6379/0"
    ]  # the only value without a secret


def test_web_environment_passes_manage_py_check_deploy(rendered: dict[str, list[Object]]) -> None:
    small, large = rendered["small"], rendered["large"]
    settings_of = {
        name: one(o, "ConfigMap", "clusterwatch-settings")["data"] for name, o in rendered.items()
    }
    environment = container_env(_main(small, "clusterwatch-web"), small, secret_example(), POD)
    env = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings", **environment}

    finished = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert re.search(r"System check identified no issues", finished.stdout), finished.stdout
    # The large overlay's web pods differ only in INGEST_SHARDS (checked by the ingest workers).
    assert {
        k for k in settings_of["small"] if settings_of["small"][k] != settings_of["large"][k]
    } == {"INGEST_SHARDS"}
    assert _main(large, "clusterwatch-web")["env"] == _main(small, "clusterwatch-web")["env"]
