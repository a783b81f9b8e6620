#!/usr/bin/env python3
"""`make demo`: set up and run the whole stack in the foreground.

Database + migrations + static files, a demo admin, the simulator with 24 h of
history loaded into a Prometheus of our own, then the ASGI web server, a Celery
worker and Celery beat. Ctrl-C stops every process this script started (each
runs in its own process group, stopped by PID) and nothing else.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAR = ROOT / "var"
DEMO = VAR / "demo"
PY = str(ROOT / ".venv" / "bin" / "python")
BIN = ROOT / ".venv" / "bin"


def say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def persistent_secret(path: Path, length: int) -> str:
    """A random secret generated once and kept in var/ so reruns reuse it."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(length))
        path.chmod(0o600)
    return path.read_text().strip()


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_from(port: int) -> int:
    while not port_is_free(port):
        port += 1
    return port


def run(args: list[str], env: dict[str, str]) -> None:
    """A set-up step: must succeed."""
    result = subprocess.run(args, cwd=ROOT, env=env)
    if result.returncode != 0:
        sys.exit(f"[demo] failed: {' '.join(args)}")


def ensure_database(env: dict[str, str]) -> None:
    code = (
        "import psycopg, os\n"
        "from config import env\n"
        "db = env.env_database('DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/clusterwatch')\n"
        "conn = psycopg.connect(host=db.host, port=db.port, user=db.user, password=db.password,"
        " dbname='postgres', autocommit=True)\n"
        "if not conn.execute('SELECT 1 FROM pg_database WHERE datname=%s', (db.name,)).fetchone():\n"
        "    conn.execute('CREATE DATABASE \"%s\"' % db.name.replace('\"', ''))\n"
        "    print('[demo] created database', db.name)\n"
    )
    run([PY, "-c", code], env)


class Supervisor:
    """Starts processes in their own process groups and stops exactly those."""

    def __init__(self) -> None:
        self.processes: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> None:
        say(f"starting {name}: {' '.join(args)}")
        process = subprocess.Popen(args, cwd=ROOT, env=env, start_new_session=True)
        self.processes.append((name, process))

    def dead(self) -> str | None:
        for name, process in self.processes:
            if process.poll() is not None:
                return f"{name} exited with status {process.returncode}"
        return None

    def stop(self) -> None:
        # A second Ctrl-C / SIGTERM while stopping must not leave the children running.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for name, process in reversed(self.processes):
            if process.poll() is None:
                say(f"stopping {name} (pid {process.pid})")
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.time() + 15
        for _, process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def wait_for(url: str, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status < 500:
                    return True
        except OSError:
            time.sleep(0.5)
    return False


BLOCK = timedelta(hours=2)


def history_pieces(end: datetime, hours: int) -> list[tuple[datetime, datetime]]:
    """[end - hours, end] split on Prometheus's 2 h block boundaries (promtool is fast per block)."""
    start = end - timedelta(hours=hours)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    boundary = epoch + ((start - epoch) // BLOCK + 1) * BLOCK
    pieces, cursor = [], start
    while cursor < end:
        piece_end = min(boundary, end)
        pieces.append((cursor, piece_end))
        cursor, boundary = piece_end, boundary + BLOCK
    return pieces


def load_piece(job: tuple[list[str], dict[str, str], Path, Path]) -> str:
    """Write one piece of history and turn it into TSDB blocks; returns an error or ''."""
    command, env, history, data = job
    promtool = ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(history), str(data)]
    for step in (command, promtool):
        result = subprocess.run(step, cwd=ROOT, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            return f"{' '.join(step[:4])}: {result.stdout[-500:]}{result.stderr[-500:]}"
    history.unlink()
    return ""


#: Per exporter scrape intervals (simulator.targets.scrape_intervals) of the history and live.
HISTORY_INTERVALS = "treydock=60s,30s"
LIVE_INTERVALS = "dcgm=15s,treydock=60s,30s"


def prepare_history(env: dict[str, str], nodes: int, hours: int, epoch: datetime) -> Path:
    """A fresh TSDB holding `hours` of simulator history ending now."""
    if DEMO.exists():
        shutil.rmtree(DEMO)
    data = DEMO / "prometheus"
    data.mkdir(parents=True)
    end = datetime.now(UTC).replace(microsecond=0)
    pieces = history_pieces(end, hours)
    say(f"writing {hours} h of simulator history for {nodes} nodes ({len(pieces)} pieces)")
    jobs = []
    for index, (start, stop) in enumerate(pieces):
        history = DEMO / f"history-{index:02d}.om"
        hours_piece = f"{(stop - start).total_seconds() / 3600:.6f}"
        command = [PY, "manage.py", "simulate", "history", "--nodes", str(nodes)]
        command += ["--scenario", "demo", "--epoch", epoch.isoformat(), "--end", stop.isoformat()]
        # A realistic mix (docs/scaling.md "Scrape intervals"): treydock's fabric walk every
        # 60 s, the rest every 30 s (live, dcgm-exporter is scraped every 15 s).
        command += ["--hours", hours_piece, "--step", "30", "--out", str(history)]
        command += ["--scrape-interval", HISTORY_INTERVALS]
        jobs.append((command, env, history, data))
    started = time.time()
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        for done, error in enumerate(pool.map(load_piece, jobs), start=1):
            if error:
                sys.exit(f"[demo] history failed: {error}")
            say(f"history piece {done}/{len(jobs)} loaded ({time.time() - started:.0f} s)")
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))
    parser.add_argument("--nodes", type=int, default=int(os.environ.get("DEMO_NODES", 64)))
    parser.add_argument("--hours", type=int, default=int(os.environ.get("DEMO_HISTORY_HOURS", 24)))
    options = parser.parse_args()

    if not port_is_free(options.port):
        sys.exit(
            f"[demo] port {options.port} is in use: run `make demo PORT=8001` or stop what uses it"
        )
    prom_port = free_port_from(int(os.environ.get("DEMO_PROMETHEUS_PORT", 9090)))
    sim_port = free_port_from(int(os.environ.get("DEMO_SIMULATOR_PORT", 9400)))
    env = dict(os.environ)
    env.setdefault("SECRET_KEY", persistent_secret(VAR / "secret_key", 50))
    env.setdefault("DEBUG", "0")
    env.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost")
    env.setdefault("EXTERNAL_URL", f"http://127.0.0.1:{options.port}")
    env["PROMETHEUS_URL"] = env.get("DEMO_PROMETHEUS_URL", f"http://127.0.0.1:{prom_port}")
    env["PYTHONUNBUFFERED"] = "1"
    # A fresh database ingests the whole simulated day on its first cycle.
    env.setdefault("INGEST_INITIAL_LOOKBACK_SECONDS", str(options.hours * 3600))
    # The simulator's Kueue LocalQueues and the ClusterQueues they feed.
    env.setdefault(
        "INGEST_LOCAL_QUEUE_MAP",
        '{"llm-pretrain/pretrain": "cq-pretrain", "research/research": "cq-research"}',
    )

    ensure_database(env)
    run([PY, "manage.py", "migrate", "--noinput", "-v", "0"], env)
    run([PY, "manage.py", "collectstatic", "--noinput", "-v", "0"], env)
    password = persistent_secret(VAR / "demo_password", 12)
    run(
        [PY, "manage.py", "ensure_demo_user", "admin"],
        env | {"CLUSTERWATCH_DEMO_PASSWORD": password},
    )
    epoch = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    data = prepare_history(env, options.nodes, options.hours, epoch)
    config = DEMO / "prometheus.yml"

    supervisor = Supervisor()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        supervisor.start(
            "simulator",
            [
                PY,
                "manage.py",
                "simulate",
                "serve",
                "--nodes",
                str(options.nodes),
                "--scenario",
                "demo",
                "--port",
                str(sim_port),
                "--epoch",
                epoch.isoformat(),
                "--write-prometheus-config",
                str(config),
                "--scrape-interval",
                LIVE_INTERVALS,
            ],
            env,
        )
        if not wait_for(f"http://127.0.0.1:{sim_port}/", 60) or not config.exists():
            raise RuntimeError("the simulator did not come up")
        supervisor.start(
            "prometheus",
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                "--storage.tsdb.retention.time=15d",
                f"--web.listen-address=127.0.0.1:{prom_port}",
                "--log.level=warn",
            ],
            env,
        )
        supervisor.start(
            "web",
            [str(BIN / "python"), "-m", "config.serve", "--port", str(options.port)],
            env,
        )
        supervisor.start(
            "worker",
            [str(BIN / "celery"), "-A", "config", "worker", "-l", "info", "--concurrency", "2"],
            env,
        )
        supervisor.start(
            "beat",
            [
                str(BIN / "celery"),
                "-A",
                "config",
                "beat",
                "-l",
                "info",
                "-s",
                str(VAR / "celerybeat-schedule"),
            ],
            env,
        )
        if not wait_for(f"http://127.0.0.1:{options.port}/healthz", 60):
            raise RuntimeError("the web server did not come up")
        say("")
        say(f"ClusterWatch is running on http://127.0.0.1:{options.port}")
        say(f"log in as: admin / {password}")
        say(f"Prometheus: http://127.0.0.1:{prom_port}   simulator: http://127.0.0.1:{sim_port}")
        say("Ctrl-C stops everything started here.")
        while (problem := supervisor.dead()) is None:
            time.sleep(1)
        say(problem)
    except KeyboardInterrupt:
        say("Ctrl-C: shutting down")
    finally:
        supervisor.stop()


if __name__ == "__main__":
    main()
