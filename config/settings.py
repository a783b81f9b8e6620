"""Django settings, read from the environment only (see .env.example)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from kombu import Queue

from core.secrets import has_credentials, redact_url

from . import env

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env.env_bool("DEBUG", False)
_INSECURE_KEY = "insecure-development-key-change-me"
SECRET_KEY = env.env_str("SECRET_KEY", _INSECURE_KEY if DEBUG else "")
if not SECRET_KEY:
    env.ERRORS.append("SECRET_KEY: not set (required when DEBUG is off)")
    SECRET_KEY = _INSECURE_KEY
ALLOWED_HOSTS = env.env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.env_list("CSRF_TRUSTED_ORIGINS", [])
TIME_ZONE = env.env_timezone("TIME_ZONE", "UTC")
USE_TZ = True
USE_I18N = False
LANGUAGE_CODE = "en-us"

DATABASE_URL = env.env_database("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/clusterwatch")
REDIS_URL = env.env_url("REDIS_URL", "redis://127.0.0.1:6379/0", ("redis", "rediss"))
PROMETHEUS_URL = env.env_url("PROMETHEUS_URL", "http://127.0.0.1:9090", ("http", "https"))
if has_credentials(PROMETHEUS_URL):
    env.WARNINGS.append(
        f"PROMETHEUS_URL={redact_url(PROMETHEUS_URL)}: carries credentials; set "
        "PROMETHEUS_BASIC_AUTH=user:password (or PROMETHEUS_BEARER_TOKEN) and take them out of "
        "the URL (they are redacted from every message, page and API answer)"
    )
PROMETHEUS_TIMEOUT_SECONDS = env.env_float("PROMETHEUS_TIMEOUT_SECONDS", 30.0, minimum=0.1)
# The whole of one request (PROMETHEUS_TIMEOUT_SECONDS bounds each socket read only) and the
# largest answer read (a range answer larger is fetched again as two half windows).
PROMETHEUS_DEADLINE_SECONDS = env.env_float(
    "PROMETHEUS_DEADLINE_SECONDS", 2 * PROMETHEUS_TIMEOUT_SECONDS, minimum=0.1
)
PROMETHEUS_MAX_ANSWER_BYTES = env.env_int(
    "PROMETHEUS_MAX_ANSWER_BYTES", 64 * 1024 * 1024, minimum=1024
)
# /api/v1/coverage and /coverage/: the deadline of each of their Prometheus queries.
COVERAGE_DEADLINE_SECONDS = env.env_float("COVERAGE_DEADLINE_SECONDS", 5.0, minimum=0.1)
# Prometheus-compatible backends (Thanos Query, Mimir, VictoriaMetrics): a path
# prefix goes in PROMETHEUS_URL itself (https://mimir.example.com/prometheus).
PROMETHEUS_BEARER_TOKEN = env.env_str("PROMETHEUS_BEARER_TOKEN", "")
PROMETHEUS_BASIC_AUTH = env.env_str("PROMETHEUS_BASIC_AUTH", "")
if PROMETHEUS_BASIC_AUTH and ":" not in PROMETHEUS_BASIC_AUTH:
    env.ERRORS.append("PROMETHEUS_BASIC_AUTH: expected user:password")
    PROMETHEUS_BASIC_AUTH = ""
PROMETHEUS_HEADERS = env.env_mapping("PROMETHEUS_HEADERS", {})
PROMETHEUS_CA_BUNDLE = env.env_str("PROMETHEUS_CA_BUNDLE", "")
if PROMETHEUS_CA_BUNDLE and not Path(PROMETHEUS_CA_BUNDLE).is_file():
    env.ERRORS.append(f"PROMETHEUS_CA_BUNDLE={PROMETHEUS_CA_BUNDLE!r}: no such file")
    PROMETHEUS_CA_BUNDLE = ""
# Which query API PROMETHEUS_URL speaks: "auto" (asks /api/v1/status/buildinfo once per
# process), "prometheus" (Prometheus, Thanos, Mimir) or "victoriametrics" (docs/scaling.md).
PROMETHEUS_FLAVOR = env.env_str("PROMETHEUS_FLAVOR", "auto")
if PROMETHEUS_FLAVOR not in {"auto", "prometheus", "victoriametrics"}:
    env.ERRORS.append(
        f"PROMETHEUS_FLAVOR={PROMETHEUS_FLAVOR!r}: expected auto, prometheus or victoriametrics"
    )
    PROMETHEUS_FLAVOR = "auto"
# How ingest reads samples: "remote_read" (POST /api/v1/read, protobuf: no PromQL evaluation,
# no JSON; the GPU and IB families compute each step's value from raw samples, ingest.step_reads),
# "query_range" (every family through range queries; read_raw through range selectors),
# "range_selector" (read_raw through instant queries of selector[range]; the families through
# query_range) or "auto" (remote read where the flavour has it, docs/scaling.md).
PROMETHEUS_READ_PATH = env.env_choice(
    "PROMETHEUS_READ_PATH", "auto", ("auto", "remote_read", "query_range", "range_selector")
)
# Push mode (docs/push.md): Prometheus remote-writes the GPU and IB series to
# ``manage.py push_receiver`` and ingest asks it for those families' steps, reading from
# Prometheus only the steps it cannot answer exactly. INGEST_PUSH_URL: where ingest finds the
# receiver ("" = off), or a comma-separated list of receivers that each get a hashmod shard
# of the series (docs/push.md "Several receivers"); INGEST_PUSH_TOKEN: the bearer token both
# sides use (required to run it).
INGEST_PUSH_URL = ",".join(env.env_url_list("INGEST_PUSH_URL", ("http", "https")))
INGEST_PUSH_TOKEN = env.env_str("INGEST_PUSH_TOKEN", "")
INGEST_PUSH_LISTEN = env.env_str("INGEST_PUSH_LISTEN", "127.0.0.1:9201")
# Steps newer than this are read from Prometheus (it may still be sending them).
INGEST_PUSH_DELAY_SECONDS = env.env_int("INGEST_PUSH_DELAY_SECONDS", 15, minimum=0)
# How long pushed samples are kept (older steps are read from Prometheus: catch-up).
INGEST_PUSH_RETENTION_SECONDS = env.env_int("INGEST_PUSH_RETENTION_SECONDS", 900, minimum=60)
# The Prometheus that sends (its runtimeinfo says when it restarted); default PROMETHEUS_URL.
INGEST_PUSH_SENDER_URL = env.env_str("INGEST_PUSH_SENDER_URL", "") or PROMETHEUS_URL
INGEST_PUSH_SENDER_CHECK_SECONDS = env.env_float(
    "INGEST_PUSH_SENDER_CHECK_SECONDS", 5.0, minimum=0.5
)
# Metric names kept (a full-match regex); every other pushed series is counted and dropped.
INGEST_PUSH_KEEP = env.env_str(
    "INGEST_PUSH_KEEP", r"DCGM_FI_.*|dcgm_.*|node_infiniband_.*|infiniband_.*"
)
# Several receivers (docs/push.md "Several receivers"): this one takes shard "I/N" of
# Prometheus' hashmod of INGEST_PUSH_SHARD_LABEL ("" = every series).
INGEST_PUSH_SHARD = env.env_str("INGEST_PUSH_SHARD", "")
INGEST_PUSH_SHARD_LABEL = env.env_str("INGEST_PUSH_SHARD_LABEL", "instance")
INGEST_PUSH_MAX_BODY_BYTES = env.env_int("INGEST_PUSH_MAX_BODY_BYTES", 64 << 20, minimum=1024)
# gc.set_threshold of Celery workers, manage.py ingest and the push receiver (core.gc_tuning):
# three integers, CPython's defaults being 700,10,10.
WORKER_GC_THRESHOLDS = env.env_int_list("WORKER_GC_THRESHOLDS", [100_000, 50, 100], 3, minimum=1)
# Queries in flight at once per process (a semaphore in PrometheusClient); 0 = no limit.
PROMETHEUS_MAX_CONCURRENCY = env.env_int("PROMETHEUS_MAX_CONCURRENCY", 8, minimum=0)
HTTP_TIMEOUT_SECONDS = env.env_float("HTTP_TIMEOUT_SECONDS", 10.0, minimum=0.1)
READYZ_TIMEOUT_SECONDS = env.env_float("READYZ_TIMEOUT_SECONDS", 2.0, minimum=0.1)
METRICS_ALLOWED_IPS = env.env_networks("METRICS_ALLOWED_IPS", ["127.0.0.1", "::1"])
METRICS_TOKEN = env.env_str("METRICS_TOKEN", "")
INGEST_INTERVAL_SECONDS = env.env_int("INGEST_INTERVAL_SECONDS", 30, minimum=5)
INGEST_NODE_LABELS = env.env_list(
    "INGEST_NODE_LABELS", ["node", "hostname", "Hostname", "kubernetes_node"]
)
INGEST_STEP_SECONDS = env.env_int("INGEST_STEP_SECONDS", INGEST_INTERVAL_SECONDS, minimum=1)
INGEST_SETTLE_SECONDS = env.env_int("INGEST_SETTLE_SECONDS", 30, minimum=0)
# The longest scrape interval expected of an exporter (ingest.sampling, docs/scaling.md).
INGEST_MAX_SCRAPE_INTERVAL_SECONDS = env.env_int(
    "INGEST_MAX_SCRAPE_INTERVAL_SECONDS", 120, minimum=1
)
INGEST_INITIAL_LOOKBACK_SECONDS = env.env_int("INGEST_INITIAL_LOOKBACK_SECONDS", 3600, minimum=0)
INGEST_PROMETHEUS_RETENTION_DAYS = env.env_int("INGEST_PROMETHEUS_RETENTION_DAYS", 15, minimum=1)
INGEST_CHUNK_STEPS = env.env_int("INGEST_CHUNK_STEPS", 120, minimum=1)
# Shards per node-level family (gpu, ib): each is a Celery task on the ``ingest`` queue; 1 = one task per cycle.
INGEST_SHARDS = env.env_int("INGEST_SHARDS", 1, minimum=1)
INGEST_RAW_RETENTION_DAYS = env.env_int("INGEST_RAW_RETENTION_DAYS", 14, minimum=1)
INGEST_ROLLUP_RETENTION_DAYS = env.env_int("INGEST_ROLLUP_RETENTION_DAYS", 180, minimum=1)
# Raw GPU / IB samples older than this many hours are compacted into hourly history rows
# (ingest.compaction; a few hours past the longest alert look-back, ~1 h, plus its catch-up, 1 h).
INGEST_HOT_HOURS = env.env_int("INGEST_HOT_HOURS", 6, minimum=2)
# Hot GPU / IB samples in compacted history's encodings: GPU step rows, one per node and step
# for 8 GPUs (ingest.gpu_steps), and encoded port rows (ingest.ib_encoded); off: every sample
# is written as a float8 row per device (twice the bytes; docs/scaling.md "Hot rows").
INGEST_ENCODED_HOT_ROWS = env.env_bool("INGEST_ENCODED_HOT_ROWS", True)
# Seconds one compaction run may start new hours for (below the celery queue's soft time limit).
INGEST_COMPACTION_BUDGET_SECONDS = env.env_int("INGEST_COMPACTION_BUDGET_SECONDS", 240, minimum=1)
INGEST_COMPACTION_INTERVAL_SECONDS = env.env_int(
    "INGEST_COMPACTION_INTERVAL_SECONDS", 600, minimum=60
)
# The node page's hourly node tiles (as big as 2/3 of the rollups); older windows read the rollups.
INGEST_NODE_TILE_RETENTION_DAYS = env.env_int("INGEST_NODE_TILE_RETENTION_DAYS", 14, minimum=1)
INGEST_MAX_LAG_SECONDS = env.env_int("INGEST_MAX_LAG_SECONDS", 300, minimum=1)
INGEST_DCGM_DIALECT = env.env_str("INGEST_DCGM_DIALECT", "auto")
if INGEST_DCGM_DIALECT not in {"auto", "current", "legacy"}:
    env.ERRORS.append(
        f"INGEST_DCGM_DIALECT={INGEST_DCGM_DIALECT!r}: expected auto, current or legacy"
    )
    INGEST_DCGM_DIALECT = "auto"
INGEST_IB_DIALECT = env.env_str("INGEST_IB_DIALECT", "auto")
if INGEST_IB_DIALECT not in {"auto", "node_exporter", "treydock"}:
    env.ERRORS.append(
        f"INGEST_IB_DIALECT={INGEST_IB_DIALECT!r}: expected auto, node_exporter or treydock"
    )
    INGEST_IB_DIALECT = "auto"
INGEST_AFTER_COMMIT_HOOKS = env.env_list(
    "INGEST_AFTER_COMMIT_HOOKS", ["alerts.hooks.on_ingest_committed", "dashboard.api.builders.warm"]
)
# The overview is cached until the next ingest commit or alert change, and at most this long
# (what only the clock changes: ingest lag, missing nodes). 0: built on every request.
DASHBOARD_OVERVIEW_REFRESH_SECONDS = env.env_int(
    "DASHBOARD_OVERVIEW_REFRESH_SECONDS", 15, minimum=0
)
# Node pages read 5-minute columns from the hourly node tiles; off: from the rollups the
# tiles copy (same values, slower; bench_load's reference figure).
DASHBOARD_NODE_TILES = env.env_bool("DASHBOARD_NODE_TILES", True)
try:
    INGEST_PROMQL_OVERRIDES = json.loads(env.env_str("INGEST_PROMQL_OVERRIDES", "{}") or "{}")
    assert isinstance(INGEST_PROMQL_OVERRIDES, dict)
except (ValueError, AssertionError):
    env.ERRORS.append(
        "INGEST_PROMQL_OVERRIDES: expected a JSON object of family.dialect.name -> PromQL"
    )
    INGEST_PROMQL_OVERRIDES = {}
# Node pool from taints: taint key (or key=value) -> pool; "" means the taint's value names it.
INGEST_POOL_TAINTS = env.env_json_object(
    "INGEST_POOL_TAINTS",
    {
        "node-pool": "",
        "pool": "",
        "nvidia.com/gpu-pool": "",
        "dedicated=training": "training",
        "dedicated=inference": "inference",
    },
)
INGEST_POOL_DEFAULT = env.env_str("INGEST_POOL_DEFAULT", "unknown")
if INGEST_POOL_DEFAULT not in {"training", "inference", "unknown"}:
    env.ERRORS.append(
        f"INGEST_POOL_DEFAULT={INGEST_POOL_DEFAULT!r}: expected training, inference or unknown"
    )
    INGEST_POOL_DEFAULT = "unknown"
# Kueue exports no LocalQueue -> ClusterQueue mapping: {"namespace/localqueue": "clusterqueue"}
# or {"localqueue": "clusterqueue"}; otherwise a ClusterQueue of the same name is assumed.
INGEST_LOCAL_QUEUE_MAP = env.env_json_object("INGEST_LOCAL_QUEUE_MAP", {})
EXTERNAL_URL = env.env_str("EXTERNAL_URL", "http://127.0.0.1:8000")

# Notifications (alerts.notify): flush cadence, delivery lease, retries, message size.
ALERTS_NOTIFY_INTERVAL_SECONDS = env.env_float("ALERTS_NOTIFY_INTERVAL_SECONDS", 10.0, minimum=1.0)
ALERTS_NOTIFY_LEASE_SECONDS = env.env_float("ALERTS_NOTIFY_LEASE_SECONDS", 60.0, minimum=1.0)
ALERTS_NOTIFY_MAX_ATTEMPTS = env.env_int("ALERTS_NOTIFY_MAX_ATTEMPTS", 8, minimum=1)
ALERTS_NOTIFY_BACKOFF_SECONDS = env.env_float("ALERTS_NOTIFY_BACKOFF_SECONDS", 10.0, minimum=0.01)
ALERTS_NOTIFY_BACKOFF_MAX_SECONDS = env.env_float(
    "ALERTS_NOTIFY_BACKOFF_MAX_SECONDS", 900.0, minimum=0.01
)
ALERTS_NOTIFY_MAX_RETRY_AFTER_SECONDS = env.env_float(
    "ALERTS_NOTIFY_MAX_RETRY_AFTER_SECONDS", 3600.0, minimum=0.0
)
ALERTS_NOTIFY_MAX_ALERTS = env.env_int("ALERTS_NOTIFY_MAX_ALERTS", 200, minimum=1)
ALERTS_NOTIFY_ALERTMANAGER_RESEND_SECONDS = env.env_int(
    "ALERTS_NOTIFY_ALERTMANAGER_RESEND_SECONDS", 60, minimum=1
)
ALERTS_NOTIFY_RETENTION_DAYS = env.env_int("ALERTS_NOTIFY_RETENTION_DAYS", 30, minimum=1)
# A delivery's whole request (connect + send + read) ends after HTTP_TIMEOUT_SECONDS; the
# lease is renewed every third of ALERTS_NOTIFY_LEASE_SECONDS while a send is in flight.
# Webhook receivers should refuse signatures older than this (docs/alerts.md "Channels").
ALERTS_NOTIFY_SIGNATURE_TOLERANCE_SECONDS = env.env_int(
    "ALERTS_NOTIFY_SIGNATURE_TOLERANCE_SECONDS", 300, minimum=1
)
# "Until resolved" silences are mirrored into Alertmanager this far ahead, and extended.
ALERTS_NOTIFY_SILENCE_HORIZON_SECONDS = env.env_int(
    "ALERTS_NOTIFY_SILENCE_HORIZON_SECONDS", 900, minimum=60
)
# Alertmanager channels: auth and TLS like the Prometheus backend's (every Alertmanager channel).
ALERTMANAGER_BEARER_TOKEN = env.env_str("ALERTMANAGER_BEARER_TOKEN", "")
ALERTMANAGER_BASIC_AUTH = env.env_str("ALERTMANAGER_BASIC_AUTH", "")
if ALERTMANAGER_BASIC_AUTH and ":" not in ALERTMANAGER_BASIC_AUTH:
    env.ERRORS.append("ALERTMANAGER_BASIC_AUTH: expected user:password")
    ALERTMANAGER_BASIC_AUTH = ""
ALERTMANAGER_HEADERS = env.env_mapping("ALERTMANAGER_HEADERS", {})
ALERTMANAGER_CA_BUNDLE = env.env_str("ALERTMANAGER_CA_BUNDLE", "")
if ALERTMANAGER_CA_BUNDLE and not Path(ALERTMANAGER_CA_BUNDLE).is_file():
    env.ERRORS.append(f"ALERTMANAGER_CA_BUNDLE={ALERTMANAGER_CA_BUNDLE!r}: no such file")
    ALERTMANAGER_CA_BUNDLE = ""
# Email channels: Django's SMTP backend, configured from the environment.
EMAIL_BACKEND = env.env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env.env_str("EMAIL_HOST", "127.0.0.1")
EMAIL_PORT = env.env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env.env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env.env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env.env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env.env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env.env_float("EMAIL_TIMEOUT", 10.0, minimum=0.1)
DEFAULT_FROM_EMAIL = env.env_str("DEFAULT_FROM_EMAIL", "clusterwatch@localhost")

# --- alerts (see .env.example) ---------------------------------------------
# A sample stays "current" this long; a longer gap ends a condition's streak.
ALERTS_MAX_SAMPLE_GAP_SECONDS = env.env_int(
    "ALERTS_MAX_SAMPLE_GAP_SECONDS", 3 * INGEST_STEP_SECONDS, minimum=1
)
ALERTS_MAX_CATCHUP_SECONDS = env.env_int("ALERTS_MAX_CATCHUP_SECONDS", 3600, minimum=0)
# A backtest reads its candidate GPUs' whole series about this many steps at a time (~300 B each
# in memory), so a week at any cluster size fits a web worker (alerts.backtest).
ALERTS_BACKTEST_BATCH_POINTS = env.env_int("ALERTS_BACKTEST_BATCH_POINTS", 500_000, minimum=1)
# A new alert whose condition already held at its look-back's start: how far back its real start
# is searched (first span, growing x4, up to the maximum; alerts.since). 0 turns the walk-back off.
ALERTS_SINCE_FIRST_WALKBACK_SECONDS = env.env_int(
    "ALERTS_SINCE_FIRST_WALKBACK_SECONDS", 3600, minimum=0
)
ALERTS_SINCE_MAX_WALKBACK_SECONDS = env.env_int(
    "ALERTS_SINCE_MAX_WALKBACK_SECONDS", 2 * 86400, minimum=0
)
ALERTS_SILENCE_RETENTION_SECONDS = env.env_int(
    "ALERTS_SILENCE_RETENTION_SECONDS", 5 * 86400, minimum=0
)
ALERTS_EVALUATE_ON_INGEST = env.env_bool("ALERTS_EVALUATE_ON_INGEST", True)
ALERTS_EVALUATION_INTERVAL_SECONDS = env.env_int(
    "ALERTS_EVALUATION_INTERVAL_SECONDS", 60, minimum=5
)
# The dead man's switch (alerts.watchdog): the watchdog alert fires while the newest evaluation
# is younger than this; HEARTBEAT_URL (a secret) is fetched after each successful evaluation.
ALERTS_WATCHDOG_MAX_AGE_SECONDS = env.env_int(
    "ALERTS_WATCHDOG_MAX_AGE_SECONDS", 3 * ALERTS_EVALUATION_INTERVAL_SECONDS, minimum=1
)
HEARTBEAT_URL = env.env_secret_url("HEARTBEAT_URL")
HEARTBEAT_TIMEOUT_SECONDS = env.env_float("HEARTBEAT_TIMEOUT_SECONDS", 10.0, minimum=0.1)
ALERTS_EVALUATION_RETENTION_SECONDS = env.env_int(
    "ALERTS_EVALUATION_RETENTION_SECONDS", 2 * 86400, minimum=0
)
ALERTS_SILENCE_TOKEN_SCOPE = env.env_str("ALERTS_SILENCE_TOKEN_SCOPE", "create_runs")
if ALERTS_SILENCE_TOKEN_SCOPE not in {"read", "checkpoints", "create_runs"}:
    env.ERRORS.append(
        f"ALERTS_SILENCE_TOKEN_SCOPE={ALERTS_SILENCE_TOKEN_SCOPE!r}: "
        "expected read, checkpoints or create_runs"
    )
    ALERTS_SILENCE_TOKEN_SCOPE = "create_runs"
# namespace → team: node alerts hurting a run in the namespace carry team=<team> (the admin's
# "namespace teams" win over it).
ALERTS_NAMESPACE_TEAMS = env.env_namespace_teams("ALERTS_NAMESPACE_TEAMS", {})

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "core",
    "ingest",
    "runs",
    "alerts",
    "dashboard",
    "simulator",
]

MIDDLEWARE = [
    "core.metrics.RequestMetricsMiddleware",
    "core.middleware.ApiJsonErrorsMiddleware",
    "core.middleware.InputGuardMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "core.auth.BearerTokenMiddleware",
    "core.auth.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# Paths reachable without a session. Everything else needs a login (pages) or
# a bearer token / session (``/api/``).
PUBLIC_PATHS = ["/healthz", "/readyz", "/metrics", "/accounts/login/", "/static/", "/admin/login/"]
API_PREFIX = "/api/"
LOGIN_URL = "/accounts/login/"
CSRF_FAILURE_VIEW = "core.views.csrf_failure"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.context.navigation",
            ],
        },
    },
]

DATABASES: dict[str, dict[str, Any]] = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_URL.name,
        "USER": DATABASE_URL.user,
        "PASSWORD": DATABASE_URL.password,
        "HOST": DATABASE_URL.host,
        "PORT": DATABASE_URL.port,
        "CONN_MAX_AGE": env.env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0),
        # JIT compiles plans estimated costly (e.g. a 24 h heatmap of 1,000+ nodes) and then
        # adds ~0.3 s to queries that run in tens of ms: off for this app's connections.
        "OPTIONS": {"connect_timeout": 5, "options": "-c jit=off"},
    }
}
# Web processes (ASGI: no persistent connections) set DATABASE_POOL_SIZE so a request borrows a
# pooled connection instead of paying a Postgres backend start. Celery's prefork workers keep it
# off: a pool's threads do not survive fork.
DATABASE_POOL_SIZE = env.env_int("DATABASE_POOL_SIZE", 0, minimum=0)
if DATABASE_POOL_SIZE:
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": DATABASE_POOL_SIZE,
        # A request waits this long for a free connection before it fails.
        "timeout": 30,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "clusterwatch",
        # One pool per process, not one per request context (core/redis_pool.py).
        "OPTIONS": {
            "socket_timeout": 2,
            "socket_connect_timeout": 2,
            "pool_class": "core.redis_pool.SharedConnectionPool",
        },
    }
}
# Sessions live in Postgres, read through Redis: a page view costs no session query.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

# channels_redis (4.3.0) waits for messages with a 5 s blocking BZPOPMIN (``brpop_timeout = 5``,
# channels_redis/core.py); redis-py (8.1.0) times a socket read out after 5 s by default
# (``DEFAULT_SOCKET_TIMEOUT = 5``, redis/_defaults.py). Equal, every idle consumer's poll raised
# TimeoutError and the browser was disconnected every 5 s: the socket timeout must exceed the poll.
CHANNEL_LAYER_BLOCKING_POLL_SECONDS = 5
CHANNEL_LAYER_SOCKET_TIMEOUT_SECONDS = env.env_float(
    "CHANNEL_LAYER_SOCKET_TIMEOUT_SECONDS", 15.0, minimum=1.0
)
if CHANNEL_LAYER_SOCKET_TIMEOUT_SECONDS <= CHANNEL_LAYER_BLOCKING_POLL_SECONDS:
    env.WARNINGS.append(
        f"CHANNEL_LAYER_SOCKET_TIMEOUT_SECONDS={CHANNEL_LAYER_SOCKET_TIMEOUT_SECONDS:g} is not above "
        f"channels_redis's {CHANNEL_LAYER_BLOCKING_POLL_SECONDS} s blocking poll: idle websockets "
        "will be dropped"
    )
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [
                {
                    "address": REDIS_URL,
                    "socket_timeout": CHANNEL_LAYER_SOCKET_TIMEOUT_SECONDS,
                    "socket_connect_timeout": 5,
                }
            ],
            "capacity": 200,
            "expiry": 30,
        },
    }
}

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Task modules autodiscovery (``<app>.tasks``) does not find.
CELERY_IMPORTS = ["alerts.notify.tasks"]
# One queue per stage, so a slow webhook never delays ingest; a plain worker consumes all of
# them, or a deployment runs one worker pool per queue (``-Q ingest``, ``-Q notify``, ...).
CELERY_TASK_DEFAULT_QUEUE = "celery"
WORKER_QUEUES = ("celery", "ingest", "alerts", "notify")
# Declared queues: a worker started without -Q consumes every one of them.
CELERY_TASK_QUEUES = [Queue(name, routing_key=name) for name in WORKER_QUEUES]
# Soft and hard time limits (seconds) of every task, per queue: TASK_TIME_LIMIT_<QUEUE>="soft,hard".
# The soft limit raises SoftTimeLimitExceeded inside the task (an ingest cycle records itself as
# failed; committed chunks stay, and the next cycle resumes from the cursor); the hard one kills
# the worker process (its cycle row is closed as interrupted by the next cycle).
_TIME_LIMIT_DEFAULTS = {"celery": (300, 360), "ingest": (300, 360), "alerts": (120, 150),
                        "notify": (60, 90)}  # fmt: skip
TASK_TIME_LIMITS: dict[str, tuple[int, int]] = {}
for _queue, (_soft, _hard) in _TIME_LIMIT_DEFAULTS.items():
    _limits = env.env_list(f"TASK_TIME_LIMIT_{_queue.upper()}", [str(_soft), str(_hard)])
    try:
        _soft, _hard = (int(v) for v in _limits)
        assert 0 < _soft < _hard
    except (ValueError, AssertionError):
        env.ERRORS.append(
            f"TASK_TIME_LIMIT_{_queue.upper()}: expected soft,hard seconds, soft < hard"
        )
    TASK_TIME_LIMITS[_queue] = (_soft, _hard)
CELERY_TASK_ROUTES = {
    # Off the ingest queue: a long compaction never delays an ingest cycle.
    "ingest.tasks.compact_history": {"queue": "celery"},
    "ingest.tasks.*": {"queue": "ingest"},
    "alerts.notify.tasks.*": {"queue": "notify"},  # before "alerts.*": globs match in order
    "alerts.*": {"queue": "alerts"},
}

# Login throttling (core.throttle): failures per username / per client address within the window.
LOGIN_WINDOW_SECONDS = env.env_float("LOGIN_WINDOW_SECONDS", 60.0, minimum=1.0)
LOGIN_MAX_FAILURES = env.env_int("LOGIN_MAX_FAILURES", 5, minimum=1)
LOGIN_MAX_FAILURES_PER_IP = env.env_int("LOGIN_MAX_FAILURES_PER_IP", 20, minimum=1)
# Requests per bearer token per clock minute before 429 + Retry-After; 0 = unlimited.
API_TOKEN_RATE_PER_MINUTE = env.env_int("API_TOKEN_RATE_PER_MINUTE", 600, minimum=0)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

STATIC_URL = "/static/"
STATIC_ROOT = Path(env.env_str("STATIC_ROOT", str(BASE_DIR / "var" / "staticfiles")))
# plotly.js is served from our own static files: the copy shipped inside the plotly package.
_PLOTLY = importlib.util.find_spec("plotly")
assert _PLOTLY is not None and _PLOTLY.origin, "plotly is missing: pip install -r requirements.lock"
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/plotly", Path(_PLOTLY.origin).parent / "package_data"),
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

# Production hardening; ``manage.py check --deploy`` is clean with DEBUG off.
SECURE_HTTPS = env.env_bool("SECURE_HTTPS", False)
SESSION_COOKIE_SECURE = SECURE_HTTPS
CSRF_COOKIE_SECURE = SECURE_HTTPS
SECURE_SSL_REDIRECT = SECURE_HTTPS
SECURE_HSTS_SECONDS = 31536000 if SECURE_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HTTPS
SECURE_HSTS_PRELOAD = SECURE_HTTPS
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if SECURE_HTTPS else None
# Kubelet probes and Prometheus scrapes reach the pod over plain HTTP, without the proxy's header:
# answer them there instead of redirecting them to https:// (which a probe would count as success).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SILENCED_SYSTEM_CHECKS = (
    [] if SECURE_HTTPS else ["security.W004", "security.W008", "security.W012", "security.W016"]
)

LOG_LEVEL = env.env_str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    env.ERRORS.append(f"LOG_LEVEL={LOG_LEVEL!r}: expected DEBUG, INFO, WARNING, ERROR or CRITICAL")
    LOG_LEVEL = "INFO"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "line": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {
        "stdout": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": "line",
        },
    },
    "root": {"handlers": ["stdout"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": ["stdout"], "level": LOG_LEVEL, "propagate": False},
        "celery": {"handlers": ["stdout"], "level": LOG_LEVEL, "propagate": False},
    },
}

# Components reported by /readyz: dotted paths to callables returning a
# ``core.health.ComponentStatus``. Later apps add their own (ingest lag).
READINESS_CHECKS = [
    "core.health.check_postgres",
    "core.health.check_redis",
    "core.health.check_prometheus",
    "ingest.health.check_ingest_lag",
]
