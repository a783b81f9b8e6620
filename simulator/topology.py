"""Static cluster shape: nodes, pools, IB ports, rail-aligned leaf switches, gang slots, queues."""

from __future__ import annotations

from dataclasses import dataclass

from simulator.rng import unit
from simulator.spec import ClusterSpec

TRAINING = "training"
INFERENCE = "inference"
GPU_MODEL = "NVIDIA H100 80GB HBM3"
DRIVER_VERSION = "550.54.15"
FB_TOTAL_MIB = 81559
SWITCH_PORTS = 64

# Gang sizes the training pool is carved into, repeated until the pool is used up.
SLOT_SIZES = (16, 8, 8, 4, 4, 4, 2, 2)


@dataclass(frozen=True)
class Queue:
    """A Kueue ClusterQueue with its LocalQueue and namespace."""

    cluster_queue: str
    local_queue: str
    namespace: str
    priority_class: str
    cohort: str
    models: tuple[str, ...]


QUEUES = (
    Queue(
        "cq-pretrain", "pretrain", "llm-pretrain", "high", "training", ("llama-70b", "moe-8x22b")
    ),
    Queue(
        "cq-research", "research", "research", "medium", "training", ("vit-g", "dpo-8b", "rm-34b")
    ),
)
INFERENCE_NAMESPACE = "inference"
INFERENCE_DEPLOYMENT = "llm-serve"


@dataclass(frozen=True)
class Node:
    """One GPU node with its static identity (names, GUIDs, where its ports plug in)."""

    index: int
    name: str
    home_pool: str
    slot: int | None
    group: int
    gpu_uuids: tuple[str, ...]
    hca_guids: tuple[str, ...]
    hca_lids: tuple[int, ...]


@dataclass(frozen=True)
class Switch:
    """A rail-aligned leaf switch: rail r of one group of nodes."""

    index: int
    name: str
    guid: str
    lid: int
    group: int
    rail: int


@dataclass(frozen=True)
class Slot:
    """A fixed set of training nodes that hosts one gang-scheduled run at a time."""

    index: int
    nodes: tuple[str, ...]
    queue: Queue


def node_name(index: int, spec: ClusterSpec) -> str:
    """gpu-001 style names; the last node carries the hostile label when one is set."""
    if spec.hostile_label and index == spec.nodes - 1:
        return spec.hostile_label
    return f"gpu-{index + 1:03d}"


def _guid(prefix: int, index: int) -> str:
    return f"0x{prefix + index:016x}"


class Topology:
    """Nodes, switches and slots, built once from the spec."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        gpus = spec.gpus_per_node
        n_inference = round(spec.nodes * spec.inference_fraction)
        n_training = spec.nodes - n_inference
        slot_of = self._carve_slots(n_training)
        self.nodes: list[Node] = []
        for i in range(spec.nodes):
            self.nodes.append(
                Node(
                    index=i,
                    name=node_name(i, spec),
                    home_pool=TRAINING if i < n_training else INFERENCE,
                    slot=slot_of.get(i),
                    group=i // spec.nodes_per_leaf,
                    gpu_uuids=tuple(self._uuid(i, g) for g in range(gpus)),
                    hca_guids=tuple(_guid(0x946DAE0300000000, i * 16 + r) for r in range(gpus)),
                    hca_lids=tuple(1 + i * gpus + r for r in range(gpus)),
                )
            )
        self.by_name = {n.name: n for n in self.nodes}
        self.slots = self._build_slots()
        self.switches = self._build_switches()

    def _uuid(self, node: int, gpu: int) -> str:
        u = int(unit(self.spec.seed, "uuid", node, gpu) * 2**64)
        h = f"{u:016x}{node:08x}{gpu:08x}"
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    def _carve_slots(self, n_training: int) -> dict[int, int]:
        slot_of: dict[int, int] = {}
        i, s = 0, 0
        while i < n_training:
            size = min(SLOT_SIZES[s % len(SLOT_SIZES)], n_training - i)
            for j in range(i, i + size):
                slot_of[j] = s
            i, s = i + size, s + 1
        return slot_of

    def _build_slots(self) -> list[Slot]:
        members: dict[int, list[str]] = {}
        for node in self.nodes:
            if node.slot is not None:
                members.setdefault(node.slot, []).append(node.name)
        return [
            Slot(s, tuple(names), QUEUES[s % len(QUEUES)]) for s, names in sorted(members.items())
        ]

    def _build_switches(self) -> list[Switch]:
        groups = (self.spec.nodes + self.spec.nodes_per_leaf - 1) // self.spec.nodes_per_leaf
        switches = []
        for g in range(groups):
            for rail in range(self.spec.gpus_per_node):
                idx = g * self.spec.gpus_per_node + rail
                name = f"ib-leaf-{g + 1:02d}-rail{rail}"
                switches.append(
                    Switch(idx, name, _guid(0xB83FD20300000000, idx), 40000 + idx, g, rail)
                )
        return switches

    def switch_for(self, node: Node, rail: int) -> tuple[Switch, int]:
        """The leaf switch and switch port that a node's rail port plugs into."""
        switch = self.switches[node.group * self.spec.gpus_per_node + rail]
        return switch, node.index % self.spec.nodes_per_leaf + 1
