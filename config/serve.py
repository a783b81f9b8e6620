"""The web server: uvicorn serving ``config.asgi`` (HTTP + websockets) with worker processes.

    python -m config.serve [--host 127.0.0.1] [--port 8000] [--workers N] [--app MODULE:NAME]

One place for how the web tier runs, used by ``make demo``, the benchmarks,
the browser tests and the container image. Django's sync views run one at a
time per process (the GIL), so a web server needs one worker process per core
it may use: ``--workers`` (default WEB_CONCURRENCY, else 2). Each worker is a
fresh interpreter (spawned, not forked) with:

- DATABASE_POOL_SIZE (default 8): a request borrows a pooled Postgres connection
  instead of starting a backend;
- MALLOC_ARENA_MAX (default 2): glibc otherwise gives each of the ASGI thread
  pool's threads its own malloc arena, and a process that has served a few
  multi-megabyte heatmaps keeps them all resident.

Websocket clients may land on any worker: live updates fan out through the
Redis channel layer, so every worker's sockets get every event.
"""

from __future__ import annotations

import argparse
import os
import sys

from config import env

DEFAULT_WORKERS = 2
WORKER_ENV = {"DATABASE_POOL_SIZE": "8", "MALLOC_ARENA_MAX": "2"}


APP = "config.asgi:application"


def argv(host: str, port: int, workers: int, app: str = APP) -> list[str]:
    """The uvicorn command line (this interpreter) for ``workers`` processes on host:port."""
    return [
        sys.executable, "-m", "uvicorn", app,
        "--host", host, "--port", str(port), "--workers", str(workers),
        "--lifespan", "off", "--no-access-log", "--ws", "websockets-sansio",
        "--timeout-graceful-shutdown", "5",
    ]  # fmt: skip


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the web workers' defaults filled in."""
    env = dict(os.environ if base is None else base)
    for name, value in WORKER_ENV.items():
        env.setdefault(name, value)
    return env


def default_workers() -> int:
    """WEB_CONCURRENCY if set (a positive integer), else DEFAULT_WORKERS."""
    workers = env.env_int("WEB_CONCURRENCY", DEFAULT_WORKERS, minimum=1)
    if env.ERRORS:
        raise SystemExit("; ".join(env.ERRORS))
    return workers


def parser() -> argparse.ArgumentParser:
    """The command line: --host, --port, --workers, --app."""
    command = argparse.ArgumentParser(
        prog="python -m config.serve", description=__doc__.splitlines()[0]
    )
    command.add_argument("--host", default="127.0.0.1")
    command.add_argument("--port", type=int, default=8000)
    command.add_argument(
        "--workers", type=int, default=None, help="default: WEB_CONCURRENCY, else 2"
    )
    command.add_argument(
        "--app",
        default=APP,
        help=f"the ASGI application (default {APP}; the benchmarks' reference differs)",
    )
    return command


def main() -> None:
    """Parse the options and replace this process with uvicorn (same PID: signals reach it)."""
    options = parser().parse_args()
    workers = options.workers or default_workers()
    command = argv(options.host, options.port, workers, options.app)
    os.execve(sys.executable, command, environment())


if __name__ == "__main__":
    main()
