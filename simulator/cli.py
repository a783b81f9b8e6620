"""Command-line plumbing shared by `manage.py simulate` (kept free of Django)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from simulator.history import write_history
from simulator.model import Cluster
from simulator.scenarios import SCENARIOS, with_scenario
from simulator.server import SimulatorServer
from simulator.spec import ClusterSpec, Dialect, ExporterOptions, default_epoch
from simulator.targets import prometheus_config, scrape_intervals, write_file_sd


def parse_time(value: str) -> datetime:
    """ISO 8601 (a trailing Z allowed); naive times are UTC."""
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Cluster shape, seed, scenario and dialect switches (both modes)."""
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenario", default="demo", choices=sorted(SCENARIOS))
    parser.add_argument(
        "--epoch", type=parse_time, help="fault anchor (default: the hour of --end/now)"
    )
    parser.add_argument("--dialects", default=",".join(Dialect.ALL), help="comma-separated subset")
    parser.add_argument("--dcgm-node-label", default="Hostname", choices=["Hostname", "hostname"])
    parser.add_argument("--dcgm-legacy", action="store_true", help="dcgm-exporter 1.x names")
    parser.add_argument("--no-dcgm-profiling", action="store_true", help="drop DCGM_FI_PROF_*")
    parser.add_argument("--no-dcgm-pod-labels", action="store_true")
    parser.add_argument(
        "--no-dcgm-xid-labels", action="store_true", help="no err_code/err_msg (before 3.3.6-3.4.2)"
    )
    parser.add_argument("--dcgm-pod-uid", action="store_true", help="--kubernetes-enable-pod-uid")
    parser.add_argument("--dcgm-mig", default="", help="MIG profile x instances, e.g. 3g.40gb:2")
    parser.add_argument(
        "--dcgm-node-name", action="store_true", help="NODE_NAME set: Hostname = node, not pod"
    )
    parser.add_argument("--hostile-label", help="e.g. '<script>alert(1)</script>'")


def _mig(value: str) -> dict[str, object]:
    """``--dcgm-mig 3g.40gb:2`` → the MIG options (profile, instances per GPU)."""
    if not value:
        return {}
    profile, _, count = value.partition(":")
    return {"dcgm_mig_profile": profile, "dcgm_mig_instances": int(count or 1)}


def build_cluster(options: dict[str, object], epoch: datetime) -> Cluster:
    """The Cluster the options describe, with the scenario's faults anchored at epoch."""
    dialects = frozenset(str(options["dialects"]).split(","))
    unknown = dialects - set(Dialect.ALL)
    if unknown:
        raise ValueError(f"unknown dialects: {', '.join(sorted(unknown))}")
    exporters = ExporterOptions(
        dialects=dialects,
        dcgm_node_label=str(options["dcgm_node_label"]),
        dcgm_legacy=bool(options["dcgm_legacy"]),
        dcgm_profiling=not options["no_dcgm_profiling"],
        dcgm_pod_labels=not options["no_dcgm_pod_labels"],
        dcgm_xid_labels=not options.get("no_dcgm_xid_labels"),
        dcgm_pod_uid=bool(options.get("dcgm_pod_uid")),
        dcgm_node_name=bool(options.get("dcgm_node_name")),
        **_mig(str(options.get("dcgm_mig") or "")),
    )
    spec = ClusterSpec(
        nodes=int(options["nodes"]),  # type: ignore[call-overload]
        seed=int(options["seed"]),  # type: ignore[call-overload]
        epoch=epoch,
        exporters=exporters,
        hostile_label=options.get("hostile_label") or None,
    )
    return Cluster(with_scenario(replace(spec), str(options["scenario"])))


def run_history(options: dict[str, object], say: Callable[[str], None]) -> None:
    """`simulate history`: write OpenMetrics for promtool."""
    end = options.get("end") or datetime.now(UTC)
    assert isinstance(end, datetime)
    epoch = options.get("epoch") or end.replace(minute=0, second=0, microsecond=0)
    assert isinstance(epoch, datetime)
    cluster = build_cluster(options, epoch)
    start = end - timedelta(hours=float(options["hours"]))
    # "--hours 1.222222" is not exact: to the second, so a piece that starts on a step keeps
    # its first sample (it was lost at every demo history piece boundary: a one-step gap).
    start = datetime.fromtimestamp(round(start.timestamp()), UTC)
    stats = write_history(
        cluster,
        start,
        end,
        float(options["step"]),
        Path(str(options["out"])),
        str(options["families"]),
        scrape_intervals(str(options.get("scrape_interval") or ""), float(options["step"])),
    )
    say(
        f"wrote {stats.samples} samples ({stats.bytes / 1e6:.1f} MB) to {stats.path} in "
        f"{stats.seconds:.1f} s; epoch {epoch.isoformat()}, last sample {stats.last:.0f}"
    )


def run_serve(options: dict[str, object], say: Callable[[str], None]) -> None:
    """`simulate serve`: serve every target over HTTP until interrupted."""
    epoch = options.get("epoch") or default_epoch()
    assert isinstance(epoch, datetime)
    cluster = build_cluster(options, epoch)
    server = SimulatorServer(cluster, str(options["host"]), int(options["port"]))  # type: ignore[call-overload]
    from simulator.render import renderer_for

    targets = renderer_for(cluster).targets
    address = str(options.get("advertise") or server.address)
    if options.get("write_file_sd"):
        write_file_sd(targets, address, Path(str(options["write_file_sd"])))
    if options.get("write_prometheus_config"):
        config_path = Path(str(options["write_prometheus_config"]))
        sd_path = Path(
            str(options.get("write_file_sd") or config_path.with_name("simulator_sd.json"))
        )
        write_file_sd(targets, address, sd_path)
        config_path.write_text(
            prometheus_config(sd_path.resolve(), str(options["scrape_interval"]))
        )
    say(f"serving {len(targets)} targets on http://{server.address}/ (epoch {epoch.isoformat()})")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        time.sleep(0)
