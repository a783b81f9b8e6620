# One image for every Python service of docker-compose.yml and deploy/kubernetes/: web (uvicorn,
# python -m config.serve), worker and beat (Celery), the cluster simulator and the one-shot
# migrate job. Settings come from the environment at run time; nothing secret is baked in.
# deploy/entrypoint.sh picks what runs: `web`, `worker QUEUES`, `beat`, `migrate`, or any command.
# Tags (docs/deploy.md "The image"): the release version (0.1.0) and sha-<12 hex> of the commit:
#   docker build --build-arg VERSION=0.1.0 -t REGISTRY/clusterwatch:0.1.0 .
FROM python:3.11-slim

ARG VERSION=dev
LABEL org.opencontainers.image.title="clusterwatch" \
      org.opencontainers.image.version="${VERSION}"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings

WORKDIR /app

# Dependencies first: this layer is rebuilt only when the lock file changes.
COPY requirements.lock ./
RUN pip install -r requirements.lock

RUN groupadd --system --gid 10001 clusterwatch \
    && useradd --system --uid 10001 --gid clusterwatch --home-dir /app --shell /usr/sbin/nologin clusterwatch

COPY . .

# Static files (plotly.js included) are collected into the image and served by WhiteNoise.
# collectstatic reads the settings, which need a SECRET_KEY when DEBUG is off: a throwaway
# one, for this command only. The var/ directories are mount points of named volumes
# (beat schedule, simulator file_sd targets; emptyDirs on Kubernetes, where the root
# filesystem is read-only) and start out owned by the app user.
RUN SECRET_KEY=collectstatic-only-not-a-runtime-key python manage.py collectstatic --noinput -v 0 \
    && chmod 0755 deploy/entrypoint.sh \
    && mkdir -p var/beat var/prometheus-sd \
    && chown -R clusterwatch:clusterwatch var

# Numeric, so Kubernetes can verify runAsNonRoot without reading /etc/passwd.
USER 10001:10001
EXPOSE 8000
ENTRYPOINT ["/app/deploy/entrypoint.sh"]
CMD ["web"]
