"""Django settings, read from the environment only (see .env.example)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
PROMETHEUS_TIMEOUT_SECONDS = env.env_float("PROMETHEUS_TIMEOUT_SECONDS", 30.0, minimum=0.1)
HTTP_TIMEOUT_SECONDS = env.env_float("HTTP_TIMEOUT_SECONDS", 10.0, minimum=0.1)
READYZ_TIMEOUT_SECONDS = env.env_float("READYZ_TIMEOUT_SECONDS", 2.0, minimum=0.1)
METRICS_ALLOWED_IPS = env.env_networks("METRICS_ALLOWED_IPS", ["127.0.0.1", "::1"])
METRICS_TOKEN = env.env_str("METRICS_TOKEN", "")
INGEST_INTERVAL_SECONDS = env.env_int("INGEST_INTERVAL_SECONDS", 30, minimum=5)
INGEST_NODE_LABELS = env.env_list("INGEST_NODE_LABELS", ["node", "hostname", "Hostname", "kubernetes_node"])
EXTERNAL_URL = env.env_str("EXTERNAL_URL", "http://127.0.0.1:8000")

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
    "alerts",
    "dashboard",
    "simulator",
]

MIDDLEWARE = [
    "core.metrics.RequestMetricsMiddleware",
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_URL.name,
        "USER": DATABASE_URL.user,
        "PASSWORD": DATABASE_URL.password,
        "HOST": DATABASE_URL.host,
        "PORT": DATABASE_URL.port,
        "CONN_MAX_AGE": env.env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0),
        "OPTIONS": {"connect_timeout": 5},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "clusterwatch",
        "OPTIONS": {"socket_timeout": 2, "socket_connect_timeout": 2},
    }
}
SESSION_ENGINE = "django.contrib.sessions.backends.db"

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "capacity": 200, "expiry": 30},
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

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

STATIC_URL = "/static/"
STATIC_ROOT = Path(env.env_str("STATIC_ROOT", str(BASE_DIR / "var" / "staticfiles")))
# plotly.js is served from our own static files: the copy shipped inside the plotly package.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/plotly", Path(importlib.util.find_spec("plotly").origin).parent / "package_data"),
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
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SILENCED_SYSTEM_CHECKS = [] if SECURE_HTTPS else ["security.W004", "security.W008", "security.W012", "security.W016"]

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
        "stdout": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout", "formatter": "line"},
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
]
