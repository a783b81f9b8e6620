"""``python manage.py push_receiver``: the remote-write receiver of push mode (docs/push.md)."""

from __future__ import annotations

import re
import signal
import threading
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.gc_tuning import tune_gc
from core.secrets import redact_url
from ingest.flavor import PROMETHEUS_LOOKBACK_SECONDS
from ingest.push_receiver import Receiver, serve
from ingest.push_store import PushStore, parse_shard


def build_receiver(
    clock_offset: float = 0.0, data_from: float | None = None, shard: str | None = None
) -> Receiver:
    """A receiver with an empty store whose data starts now (settings INGEST_PUSH_*; ``shard``
    "I/N" overrides INGEST_PUSH_SHARD).

    For benches replaying stamped history only: ``clock_offset`` seconds are added to its
    clock, ``data_from`` (unix s) says since when it has every sample instead of its start.
    """
    if not settings.INGEST_PUSH_TOKEN:
        raise CommandError("INGEST_PUSH_TOKEN is empty: set the bearer token Prometheus sends")
    try:
        keep = re.compile(settings.INGEST_PUSH_KEEP)
    except re.error as exc:
        raise CommandError(f"INGEST_PUSH_KEEP is not a regex: {exc}") from None
    try:
        index, count = parse_shard(settings.INGEST_PUSH_SHARD if shard is None else shard)
    except ValueError as exc:
        raise CommandError(f"shard {exc}") from None
    store = PushStore(
        lookback_ms=round(PROMETHEUS_LOOKBACK_SECONDS * 1000),
        retention_ms=settings.INGEST_PUSH_RETENTION_SECONDS * 1000,
        delay_ms=settings.INGEST_PUSH_DELAY_SECONDS * 1000,
        data_from_ms=round((time.time() + clock_offset if data_from is None else data_from) * 1000),
        kept_name=keep,
        shard=(index, count),
        shard_label=settings.INGEST_PUSH_SHARD_LABEL,
    )
    return Receiver(
        store,
        settings.INGEST_PUSH_TOKEN,
        max_bytes=settings.INGEST_PUSH_MAX_BODY_BYTES,
        clock=lambda: time.time() + clock_offset,
    )


class Command(BaseCommand):
    help = "Receive Prometheus remote write for the GPU and IB families and answer ingest's steps."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--listen", default=settings.INGEST_PUSH_LISTEN, help="host:port")
        parser.add_argument(
            "--shard", default=None,
            help="I/N: this receiver takes shard I of N of Prometheus' hashmod (INGEST_PUSH_SHARD)",
        )  # fmt: skip
        parser.add_argument(
            "--clock-offset", type=float, default=0.0,
            help="seconds added to the receiver's clock (benches replaying stamped history only)",
        )  # fmt: skip
        parser.add_argument(
            "--data-from", type=float, default=None,
            help="unix s its data is complete from (benches replaying stamped history only)",
        )  # fmt: skip

    def handle(self, *args: object, **options: object) -> None:
        host, _, port = str(options["listen"]).rpartition(":")
        if not host or not port.isdigit():
            raise CommandError(f"--listen {options['listen']!r}: expected host:port")
        receiver = build_receiver(
            float(options["clock_offset"]),  # type: ignore[arg-type]
            options["data_from"],  # type: ignore[arg-type]
            options["shard"],  # type: ignore[arg-type]
        )
        # The store holds millions of long-lived objects and every request allocates
        # thousands: at the default 700-allocation threshold the cyclic collector ran so
        # often that it took a third to a half of the receiver's CPU (measured offline: a
        # write 11.8 -> 7.2 us per series, a steps answer 21.6 -> 11.9 us). Nothing here
        # builds cycles; refcounting frees what prune drops. WORKER_GC_THRESHOLDS.
        tune_gc()
        server = serve(
            receiver,
            host,
            int(port),
            sender_url=settings.INGEST_PUSH_SENDER_URL,
            check_seconds=settings.INGEST_PUSH_SENDER_CHECK_SECONDS,
            timeout=settings.PROMETHEUS_TIMEOUT_SECONDS,
        )
        index, count = receiver.store.shard
        sharding = (
            f", shard {index}/{count} of hashmod({receiver.store.shard_label})" if count > 1 else ""
        )
        self.stdout.write(
            f"push receiver on http://{host}:{server.server_port}, sender "
            f"{redact_url(settings.INGEST_PUSH_SENDER_URL)}{sharding}",
        )
        self.stdout.flush()
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
        server.shutdown()
