"""The Kubernetes manifests as rendered by kustomize, and what a container of them would see.

``render(overlay)`` runs ``kubectl kustomize`` (kustomize v5, bundled with kubectl) on
deploy/kubernetes/overlays/<overlay>; the helpers pick objects and containers out of the
result and build a container's environment the way the kubelet does (envFrom, then env
with ``$(NAME)`` references expanded), so tests can run the same commands locally.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import yaml

from tests.support.processes import BASE_DIR

KUBERNETES_DIR = BASE_DIR / "deploy" / "kubernetes"
OVERLAYS = ("small", "large")
SECRET_EXAMPLE = KUBERNETES_DIR / "secret.example.yaml"
ENTRYPOINT = BASE_DIR / "deploy" / "entrypoint.sh"
_REFERENCE = re.compile(r"\$\((\w+)\)")

Object = dict[str, Any]


def render(overlay: str) -> list[Object]:
    """Every object of the overlay, as ``kubectl kustomize`` renders it."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail(
            "kubectl is not on PATH: tests/deploy render the overlays with `kubectl kustomize` "
            "(install kubectl 1.27 or later, which bundles kustomize v5)"
        )
    finished = subprocess.run(
        [kubectl, "kustomize", str(KUBERNETES_DIR / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 0, f"kubectl kustomize {overlay}: {finished.stderr}"
    return [document for document in yaml.safe_load_all(finished.stdout) if document]


def secret_example() -> Object:
    """deploy/kubernetes/secret.example.yaml (not part of any kustomization)."""
    return yaml.safe_load(SECRET_EXAMPLE.read_text())


def of_kind(objects: list[Object], kind: str) -> dict[str, Object]:
    """name -> object, for the objects of one kind."""
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def one(objects: list[Object], kind: str, name: str) -> Object:
    """The object of that kind and name (KeyError naming what is there otherwise)."""
    found = of_kind(objects, kind)
    if name not in found:
        raise KeyError(f"no {kind} {name!r}; there are {sorted(found)}")
    return found[name]


def pod_containers(workload: Object) -> Iterator[tuple[str, Object]]:
    """("init" or "main", container) for every container of a workload's pod template."""
    spec = workload["spec"]["template"]["spec"]
    for container in spec.get("initContainers", []):
        yield "init", container
    for container in spec["containers"]:
        yield "main", container


def container_env(
    container: Object, objects: list[Object], secret: Object, pod: Mapping[str, str]
) -> dict[str, str]:
    """The container's environment as the kubelet builds it.

    envFrom first (ConfigMaps from ``objects``, the Secret from ``secret``), then each
    ``env`` entry in order: a ``value`` has its ``$(NAME)`` references expanded from what
    is defined so far, a ``fieldRef`` reads ``pod`` (e.g. ``{"status.podIP": "10.0.0.1"}``).
    """
    environment: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            data = one(objects, "ConfigMap", source["configMapRef"]["name"])["data"]
        else:
            assert source["secretRef"]["name"] == secret["metadata"]["name"], source
            data = secret["stringData"]
        environment.update({name: str(value) for name, value in data.items()})
    for entry in container.get("env", []):
        if "value" in entry:
            value = _REFERENCE.sub(lambda m: environment.get(m[1], m[0]), entry["value"])
        else:
            value = pod[entry["valueFrom"]["fieldRef"]["fieldPath"]]
        environment[entry["name"]] = value
    return environment


def queues_of(container: Object) -> tuple[str, ...]:
    """The queues a worker container consumes (``args: [worker, QUEUES, ...]``)."""
    args = container["args"]
    assert args[0] == "worker", args
    return tuple(args[1].split(","))


def worker_nodename(queues: tuple[str, ...]) -> str:
    """The Celery node name prefix deploy/entrypoint.sh gives a worker of these queues."""
    return "-".join(queues)
