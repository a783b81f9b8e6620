"""Shared by bench_scale and bench_load: own database, worker env, peak RSS, RESULTS.md sections."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"


def recreate_database(name: str, drop_only: bool = False) -> None:
    """Drop (and unless ``drop_only``, create) the benchmark's own database."""
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if not drop_only:
            conn.execute(f"CREATE DATABASE {name}")


def peak_rss_mb(pid: int) -> float:
    """VmHWM (peak resident set) of a process, in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else float("nan")


def web_processes(pid: int) -> list[int]:
    """The processes serving requests under a ``config.serve`` PID: its workers, else itself."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = [int(c) for c in children.read_text().split()] if children.exists() else []
    # uvicorn's workers are multiprocessing spawns; its resource tracker is a child too.
    workers = [c for c in found if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    return workers or [pid]


def child_env(**overrides: str) -> dict[str, str]:
    """The environment of a worker / daphne started by a benchmark (same DB, Redis, settings)."""
    environment = dict(os.environ)
    environment.update(PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **overrides)
    return environment


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_section(name: str, body: str) -> None:
    """Replace (or append) the ``name`` section of bench/RESULTS.md with ``body``."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(text)
