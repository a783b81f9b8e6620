"""dcgm-exporter: the default counters CSV's fields in its label template, or the 1.x names (``-o``).

Checked against NVIDIA/dcgm-exporter 4.5.3-4.8.2 (691c92762eb551313c825f6efe4ceeee20982801):
etc/default-counters.csv (which fields are on), etc/1.x-compatibility-metrics.csv (1.x names),
internal/pkg/rendermetrics/render_metrics.go (label order: gpu, UUID|uuid, pci_bus_id, device,
modelName, [GPU_I_PROFILE, GPU_I_ID], [Hostname], then the label fields and the attributes,
each sorted by name), internal/pkg/collector/gpu_collector.go (err_code / err_msg on every XID
sample, doubles printed with %f, integers with %d) and internal/pkg/transformation (pod,
namespace, container; pod_uid only with --kubernetes-enable-pod-uid; pod_name, pod_namespace,
container_name with -o). docs/dcgm.md lists every field and what ingest does with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from simulator.exposition import COUNTER, GAUGE, Family, Lines, label_str
from simulator.faults import Fault, FaultKind
from simulator.gpu import NVLINK_BW_UNIT_BYTES, GpuSample
from simulator.model import NodeState
from simulator.spec import ExporterOptions
from simulator.topology import DRIVER_VERSION, GPU_MODEL

DEFAULT, PROF, EXTRA, NVLINK_ERRORS = "default", "prof", "extra", "nvlink_errors"
HEALTH = "health"  # commented out in the CSV (ECC) or not in it: what health monitoring enables


@dataclass(frozen=True)
class Field:
    """One dcgm-exporter field: name, GpuSample attribute, type, help, group, DCGM value type."""

    name: str
    attr: str
    type: str
    help: str
    group: str = DEFAULT
    double: bool = False
    legacy: str = ""  # its etc/1.x-compatibility-metrics.csv name ("": not in that CSV)


_PCIE_TX = "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second."  # noqa: E501
_PCIE_RX = "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second."  # noqa: E501
# In etc/default-counters.csv order; PROF: the DCP fields (gone without the profiling module);
# EXTRA / NVLINK_ERRORS: commented out in the CSV (users enable them).
FIELDS: tuple[Field, ...] = (
    Field("DCGM_FI_DEV_SM_CLOCK", "sm_clock", GAUGE, "SM clock frequency (in MHz).", legacy="dcgm_sm_clock"),
    Field("DCGM_FI_DEV_MEM_CLOCK", "mem_clock", GAUGE, "Memory clock frequency (in MHz).", legacy="dcgm_memory_clock"),
    Field("DCGM_FI_DEV_MEMORY_TEMP", "mem_temp", GAUGE, "Memory temperature (in C).", legacy="dcgm_memory_temp"),
    Field("DCGM_FI_DEV_GPU_TEMP", "gpu_temp", GAUGE, "GPU temperature (in C).", legacy="dcgm_gpu_temp"),
    Field("DCGM_FI_DEV_POWER_USAGE", "power", GAUGE, "Power draw (in W).", double=True, legacy="dcgm_power_usage"),
    Field("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "energy_mj", COUNTER,
          "Total energy consumption since boot (in mJ).", legacy="dcgm_total_energy_consumption"),
    Field("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "pcie_replay", COUNTER, "Total number of PCIe retries.",
          legacy="dcgm_pcie_replay_counter"),
    Field("DCGM_FI_DEV_GPU_UTIL", "util", GAUGE, "GPU utilization (in %).", legacy="dcgm_gpu_utilization"),
    Field("DCGM_FI_DEV_MEM_COPY_UTIL", "mem_copy_util", GAUGE, "Memory utilization (in %).",
          legacy="dcgm_mem_copy_utilization"),
    Field("DCGM_FI_DEV_ENC_UTIL", "zero", GAUGE, "Encoder utilization (in %).", legacy="dcgm_enc_utilization"),
    Field("DCGM_FI_DEV_DEC_UTIL", "zero", GAUGE, "Decoder utilization (in %).", legacy="dcgm_dec_utilization"),
    Field("DCGM_FI_DEV_XID_ERRORS", "xid", GAUGE, "Value of the last XID error encountered.",
          legacy="dcgm_xid_errors"),
    Field("DCGM_FI_DEV_FB_FREE", "fb_free", GAUGE, "Framebuffer memory free (in MiB).", legacy="dcgm_fb_free"),
    Field("DCGM_FI_DEV_FB_USED", "fb_used", GAUGE, "Framebuffer memory used (in MiB).", legacy="dcgm_fb_used"),
    Field("DCGM_FI_DEV_FB_RESERVED", "fb_reserved", GAUGE, "Framebuffer memory reserved (in MiB)."),
    Field("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "nvlink_bw", COUNTER,
          "Total number of NVLink bandwidth counters for all lanes.", legacy="dcgm_nvlink_bandwidth_total"),
    Field("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "zero", GAUGE, "vGPU License status"),
    Field("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "uncorrectable_remapped_rows", COUNTER,
          "Number of remapped rows for uncorrectable errors"),
    Field("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "correctable_remapped_rows", COUNTER,
          "Number of remapped rows for correctable errors"),
    Field("DCGM_FI_DEV_ROW_REMAP_FAILURE", "row_remap_failure", GAUGE, "Whether remapping of rows has failed"),
    Field("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gr_engine", GAUGE, "Ratio of time the graphics engine is active.",
          PROF, True, "dcgm_fi_prof_gr_engine_active"),
    Field("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor", GAUGE, "Ratio of cycles the tensor (HMMA) pipe is active.",
          PROF, True, "dcgm_fi_prof_pipe_tensor_active"),
    Field("DCGM_FI_PROF_DRAM_ACTIVE", "dram", GAUGE,
          "Ratio of cycles the device memory interface is active sending or receiving data.",
          PROF, True, "dcgm_fi_prof_dram_active"),
    Field("DCGM_FI_PROF_PCIE_TX_BYTES", "pcie_tx", GAUGE, _PCIE_TX, PROF, legacy="dcgm_fi_prof_pcie_tx_bytes"),
    Field("DCGM_FI_PROF_PCIE_RX_BYTES", "pcie_rx", GAUGE, _PCIE_RX, PROF, legacy="dcgm_fi_prof_pcie_rx_bytes"),
    Field("DCGM_FI_PROF_SM_ACTIVE", "sm_active", GAUGE, "The ratio of cycles an SM has at least 1 warp assigned.",
          EXTRA, True, "dcgm_fi_prof_sm_active"),
    Field("DCGM_FI_PROF_SM_OCCUPANCY", "sm_occupancy", GAUGE, "The ratio of number of warps resident on an SM.",
          EXTRA, True, "dcgm_fi_prof_sm_occupancy"),
    Field("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "fp64", GAUGE, "Ratio of cycles the fp64 pipes are active.", EXTRA, True),
    Field("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "fp32", GAUGE, "Ratio of cycles the fp32 pipes are active.", EXTRA, True),
    Field("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "fp16", GAUGE, "Ratio of cycles the fp16 pipes are active.", EXTRA, True),
    Field("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "nvlink_crc_flit", COUNTER,
          "Total number of NVLink flow-control CRC errors.", NVLINK_ERRORS,
          legacy="dcgm_nvlink_flit_crc_error_count_total"),
    Field("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "nvlink_crc_data", COUNTER,
          "Total number of NVLink data CRC errors.", NVLINK_ERRORS,
          legacy="dcgm_nvlink_data_crc_error_count_total"),
    Field("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "nvlink_replay", COUNTER,
          "Total number of NVLink retries.", NVLINK_ERRORS, legacy="dcgm_nvlink_replay_error_count_total"),
    Field("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "nvlink_recovery", COUNTER,
          "Total number of NVLink recovery errors.", NVLINK_ERRORS,
          legacy="dcgm_nvlink_recovery_error_count_total"),
    # Hardware health beyond the CSV's defaults: the ECC line is commented out in it; the other
    # two are DCGM fields any CSV may list (go-dcgm pkg/dcgm/const_fields.go, fields 396 and 112).
    Field("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "ecc_dbe_vol", COUNTER,
          "Total number of double-bit volatile ECC errors.", HEALTH, legacy="dcgm_ecc_dbe_volatile_total"),
    Field("DCGM_FI_DEV_ROW_REMAP_PENDING", "row_remap_pending", GAUGE, "Whether remapping of rows is pending",
          HEALTH),
    Field("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "clock_events", GAUGE, "Current clock event reasons (bitmask)",
          HEALTH),
)  # fmt: skip
# xidErrCodeToText (internal/pkg/collector/xid_errors.go) for the codes the faults use.
XID_MESSAGES = {
    0: "No Error",
    13: "Graphics Engine Exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    48: "Double Bit ECC Error",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure",
    74: "NVLINK Error",
    79: "GPU has fallen off the bus",
    92: "High single-bit ECC error rate",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
    119: "GSP RPC Timeout",
    120: "GSP Error",
}
UNKNOWN_XID = "Unknown Error"


def resolved_options(options: ExporterOptions, faults: Sequence[Fault]) -> ExporterOptions:
    """``options`` with ``dcgm_nvlink_errors=None`` decided: on iff NVLink errors are injected."""
    if options.dcgm_nvlink_errors is not None:
        return options
    injected = any(fault.kind == FaultKind.NVLINK_ERRORS for fault in faults)
    return replace(options, dcgm_nvlink_errors=injected)


def _enabled(item: Field, options: ExporterOptions) -> bool:
    if item.group == PROF:
        return options.dcgm_profiling
    if item.group == EXTRA:
        return options.dcgm_profiling and options.dcgm_extra_fields
    if item.group == NVLINK_ERRORS:
        return options.dcgm_nvlink_errors
    if item.group == HEALTH:
        return options.dcgm_health_fields
    return True


def families(options: ExporterOptions) -> list[tuple[Family, Field]]:
    """The (family, field) pairs the options enable, in exposition order."""
    chosen = [item for item in FIELDS if _enabled(item, options)]
    if options.dcgm_legacy:  # -o with the 1.x CSV: only the fields that CSV names
        return [(Family(f.legacy, f.type, f.help), f) for f in chosen if f.legacy]
    return [(Family(f.name, f.type, f.help), f) for f in chosen]


def _pod_pairs(state: NodeState, options: ExporterOptions) -> list[tuple[str, str]]:
    """The pod attributes of a GPU allocated to a running pod (empty otherwise)."""
    pod = state.pod if state.pod and state.pod.phase == "Running" else None
    if pod is None or not options.dcgm_pod_labels:
        return []
    if options.dcgm_legacy:
        pairs = [
            ("container_name", pod.container),
            ("pod_name", pod.name),
            ("pod_namespace", pod.namespace),
        ]
    else:
        pairs = [("container", pod.container), ("namespace", pod.namespace), ("pod", pod.name)]
    if options.dcgm_pod_uid:
        pairs.append(("pod_uid", pod.uid))
    return pairs


@dataclass(frozen=True)
class Entity:
    """One GPU (or GPU instance) as labelled: the pairs, and them rendered once."""

    pairs: tuple[tuple[str, str], ...]
    text: str


def _entity(pairs: list[tuple[str, str]]) -> Entity:
    return Entity(tuple(pairs), _label_text(pairs, []))


def gpu_labels(
    state: NodeState, gpu: int, options: ExporterOptions, hostname: str | None = None
) -> list[Entity]:
    """One GPU's labels, one entity per GPU instance on a MIG GPU (else one).

    ``hostname``: the exporter's own host name (its pod's name on Kubernetes without
    NODE_NAME, see ``simulator.targets``); default the node's name.
    """
    node = state.node
    base = [
        ("gpu", str(gpu)),
        ("uuid" if options.dcgm_legacy else "UUID", node.gpu_uuids[gpu]),
        ("pci_bus_id", f"00000000:{0x18 + 0x11 * gpu:02X}:00.0"),
        ("device", f"nvidia{gpu}"),
        ("modelName", GPU_MODEL),
    ]
    tail = [(options.dcgm_node_label, hostname or node.name)]
    if not options.dcgm_legacy:  # DCGM_FI_DRIVER_VERSION is a label field of the default CSV
        tail.append(("DCGM_FI_DRIVER_VERSION", DRIVER_VERSION))
    attributes = _pod_pairs(state, options)
    if not options.dcgm_mig_profile:
        return [_entity(base + tail + attributes)]
    return [
        _entity(base + [("GPU_I_PROFILE", options.dcgm_mig_profile), ("GPU_I_ID", str(instance))] + tail + attributes)
        for instance in range(1, options.dcgm_mig_instances + 1)
    ]  # fmt: skip


def _value(sample: GpuSample, item: Field) -> str:
    """The value as dcgm-exporter prints it: doubles with %f, int64 fields with %d."""
    if item.attr == "zero":
        return "0.000000" if item.double else "0"
    if item.attr == "nvlink_bw":  # DCGM's MB/s (1000 KiB/s) rate, an integer field
        return str(int(sample.nvlink_rate / NVLINK_BW_UNIT_BYTES))
    value = float(getattr(sample, item.attr))
    return f"{value:f}" if item.double else str(int(value))


def render(
    samples: list[GpuSample], labels: list[list[Entity]], options: ExporterOptions, lines: Lines
) -> None:
    """Write one node's dcgm-exporter exposition from its per-GPU samples.

    A GPU that fell off the bus (``absent``) keeps only its XID field: DCGM answers blank
    for the others, and dcgm-exporter skips blank values (internal/pkg/collector/gpu_collector.go).
    """
    repeat = [len(entities) for entities in labels]
    shown = [not sample.absent for sample, n in zip(samples, repeat, strict=True) for _ in range(n)]
    every = [entity.text for entities in labels for entity in entities]
    texts = [text for text, ok in zip(every, shown, strict=True) if ok]
    for family, item in families(options):
        lines.family(family)
        values = [_value(sample, item) for sample in samples]
        if item.attr == "xid" and options.dcgm_xid_labels:
            _render_xid(family.name, samples, labels, values, lines)
            continue
        expanded = [v for v, n in zip(values, repeat, strict=True) for _ in range(n)]
        if item.attr == "xid":
            lines.samples(family.name, every, expanded)
        else:
            lines.samples(
                family.name, texts, [v for v, ok in zip(expanded, shown, strict=True) if ok]
            )


def _render_xid(
    name: str, samples: list[GpuSample], labels: list[list[Entity]], values: list[str], lines: Lines
) -> None:
    """err_code (the value) and err_msg on every XID sample, "0" / "No Error" included."""
    for sample, entities, value in zip(samples, labels, values, strict=True):
        extra = [("err_code", value), ("err_msg", XID_MESSAGES.get(sample.xid, UNKNOWN_XID))]
        for entity in entities:
            lines.sample(name, _label_text(list(entity.pairs), extra), value)


def _label_text(pairs: list[tuple[str, str]], extra: list[tuple[str, str]]) -> str:
    """Template labels in order, then the attributes (pod labels + XID labels) sorted by name."""
    fixed = [p for p in pairs if p[0] not in _ATTRIBUTES]
    attributes = sorted([p for p in pairs if p[0] in _ATTRIBUTES] + extra)
    return label_str(fixed + attributes)


_ATTRIBUTES = frozenset(
    {"container", "namespace", "pod", "pod_uid", "container_name", "pod_name", "pod_namespace"}
)
