"""dcgm-exporter: per-GPU fields, current names (Hostname/hostname label) or the 1.x names."""

from __future__ import annotations

from simulator.exposition import COUNTER, GAUGE, Family, Lines, big, label_str, num
from simulator.gpu import GpuSample
from simulator.model import NodeState
from simulator.spec import ExporterOptions
from simulator.topology import DRIVER_VERSION, GPU_MODEL

# (field name, GpuSample attribute, type, help, profiling?, off by default?)
FIELDS: tuple[tuple[str, str, str, str, bool, bool], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "sm_clock", GAUGE, "SM clock frequency (in MHz).", False, False),
    ("DCGM_FI_DEV_MEM_CLOCK", "mem_clock", GAUGE, "Memory clock frequency (in MHz).", False, False),
    ("DCGM_FI_DEV_MEMORY_TEMP", "mem_temp", GAUGE, "Memory temperature (in C).", False, False),
    ("DCGM_FI_DEV_GPU_TEMP", "gpu_temp", GAUGE, "GPU temperature (in C).", False, False),
    ("DCGM_FI_DEV_POWER_USAGE", "power", GAUGE, "Power draw (in W).", False, False),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "energy_mj",
        COUNTER,
        "Total energy consumption since boot (in mJ).",
        False,
        False,
    ),
    ("DCGM_FI_DEV_GPU_UTIL", "util", GAUGE, "GPU utilization (in %).", False, False),
    ("DCGM_FI_DEV_FB_FREE", "fb_free", GAUGE, "Framebuffer memory free (in MiB).", False, False),
    ("DCGM_FI_DEV_FB_USED", "fb_used", GAUGE, "Framebuffer memory used (in MiB).", False, False),
    (
        "DCGM_FI_DEV_XID_ERRORS",
        "xid",
        GAUGE,
        "Value of the last XID error encountered.",
        False,
        False,
    ),
    (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "nvlink_bytes",
        COUNTER,
        "Total number of NVLink bandwidth counters for all lanes.",
        False,
        False,
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "zero",
        COUNTER,
        "Number of remapped rows for uncorrectable errors",
        False,
        False,
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "correctable_remapped_rows",
        COUNTER,
        "Number of remapped rows for correctable errors",
        False,
        False,
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "zero",
        GAUGE,
        "Whether remapping of rows has failed",
        False,
        False,
    ),
    (
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gr_engine",
        GAUGE,
        "Ratio of time the graphics engine is active.",
        True,
        False,
    ),
    (
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "tensor",
        GAUGE,
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        True,
        False,
    ),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "dram",
        GAUGE,
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        True,
        False,
    ),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "pcie_tx",
        GAUGE,
        "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.",
        True,
        False,
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "pcie_rx",
        GAUGE,
        "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.",
        True,
        False,
    ),
    (
        "DCGM_FI_PROF_SM_ACTIVE",
        "sm_active",
        GAUGE,
        "The ratio of cycles an SM has at least 1 warp assigned.",
        True,
        True,
    ),
    (
        "DCGM_FI_PROF_SM_OCCUPANCY",
        "sm_occupancy",
        GAUGE,
        "The ratio of number of warps resident on an SM.",
        True,
        True,
    ),
    (
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
        "fp16",
        GAUGE,
        "Ratio of cycles the fp16 pipes are active.",
        True,
        True,
    ),
    (
        "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
        "fp32",
        GAUGE,
        "Ratio of cycles the fp32 pipes are active.",
        True,
        True,
    ),
    (
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
        "fp64",
        GAUGE,
        "Ratio of cycles the fp64 pipes are active.",
        True,
        True,
    ),
)
NVLINK_ERROR_FIELDS = (
    (
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "nvlink_crc_flit",
        COUNTER,
        "Total number of NVLink flow-control CRC errors.",
    ),
    (
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "nvlink_crc_data",
        COUNTER,
        "Total number of NVLink data CRC errors.",
    ),
    (
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "nvlink_replay",
        COUNTER,
        "Total number of NVLink retries.",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "nvlink_recovery",
        COUNTER,
        "Total number of NVLink recovery errors.",
    ),
)
XID_MESSAGES = {
    13: "Graphics Engine Exception",
    31: "GPU memory page fault",
    48: "DBE (Double Bit Error) ECC Error",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure",
    74: "NVLINK Error",
    79: "GPU has fallen off the bus",
    92: "High single-bit ECC error rate",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
}
LEGACY_NAMES = {
    "DCGM_FI_DEV_GPU_UTIL": "dcgm_gpu_utilization",
    "DCGM_FI_DEV_MEM_CLOCK": "dcgm_memory_clock",
}


def legacy_name(name: str) -> str:
    """The dcgm-exporter 1.x name of a field (dcgm_gpu_utilization, dcgm_fi_prof_...)."""
    if name in LEGACY_NAMES:
        return LEGACY_NAMES[name]
    if name.startswith("DCGM_FI_PROF_"):
        return name.lower()
    return "dcgm_" + name.removeprefix("DCGM_FI_DEV_").lower()


def families(options: ExporterOptions) -> list[tuple[Family, str]]:
    """The (family, GpuSample attribute) pairs the options enable, in exposition order."""
    chosen: list[tuple[str, str, str, str]] = []
    for name, attr, kind, help_text, profiling, _off in FIELDS:
        if profiling and not options.dcgm_profiling:
            continue
        chosen.append((name, attr, kind, help_text))
    if options.dcgm_nvlink_errors:
        chosen.extend(NVLINK_ERROR_FIELDS)
    legacy = options.dcgm_legacy
    return [(Family(legacy_name(n) if legacy else n, k, h), a) for n, a, k, h in chosen]


def gpu_labels(
    state: NodeState, gpu: int, options: ExporterOptions, hostname: str | None = None
) -> str:
    """The label string of one GPU's series (pod labels only while a pod runs on the node).

    ``hostname``: the exporter's own host name (its pod's name on Kubernetes without
    NODE_NAME, see ``simulator.targets``); default the node's name.
    """
    node = state.node
    pod = state.pod if state.pod and state.pod.phase == "Running" else None
    if options.dcgm_legacy:
        pairs = [("gpu", str(gpu)), ("uuid", node.gpu_uuids[gpu])]
        if pod and options.dcgm_pod_labels:
            pairs += [
                ("container_name", pod.container),
                ("pod_name", pod.name),
                ("pod_namespace", pod.namespace),
            ]
        return label_str(pairs)
    pairs = [
        ("gpu", str(gpu)),
        ("UUID", node.gpu_uuids[gpu]),
        ("pci_bus_id", f"00000000:{0x18 + 0x11 * gpu:02X}:00.0"),
        ("device", f"nvidia{gpu}"),
        ("modelName", GPU_MODEL),
        (options.dcgm_node_label, hostname or node.name),
        ("DCGM_FI_DRIVER_VERSION", DRIVER_VERSION),
    ]
    if pod and options.dcgm_pod_labels:
        pairs += [("container", pod.container), ("namespace", pod.namespace), ("pod", pod.name)]
    return label_str(pairs)


def render(
    samples: list[GpuSample], labels: list[str], options: ExporterOptions, lines: Lines
) -> None:
    """Write one node's dcgm-exporter exposition from its per-GPU samples."""
    for family, attr in families(options):
        lines.family(family)
        fmt = big if family.type == COUNTER else num
        name = family.name
        if attr == "xid" and options.dcgm_xid_labels:
            _render_xid(name, samples, labels, lines)
        elif attr == "zero":
            lines.samples(name, labels, ["0"] * len(samples))
        else:
            lines.samples(name, labels, [fmt(getattr(s, attr)) for s in samples])


def _render_xid(name: str, samples: list[GpuSample], labels: list[str], lines: Lines) -> None:
    for sample, label in zip(samples, labels, strict=True):
        if sample.xid:
            msg = XID_MESSAGES.get(sample.xid, "Unknown")
            extra = label_str((("err_code", str(sample.xid)), ("err_msg", msg)))
            lines.sample(name, f"{label},{extra}", str(sample.xid))
        else:
            lines.sample(name, label, "0")
