# One image for every Python service of docker-compose.yml: web (uvicorn, python -m config.serve), worker and beat
# (Celery), the cluster simulator and the one-shot migrate job. Settings come from the
# environment at run time; nothing secret is baked in.
FROM python:3.11-slim

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
# (beat schedule, simulator file_sd targets) and start out owned by the app user.
RUN SECRET_KEY=collectstatic-only-not-a-runtime-key python manage.py collectstatic --noinput -v 0 \
    && mkdir -p var/beat var/prometheus-sd \
    && chown -R clusterwatch:clusterwatch var

USER clusterwatch
EXPOSE 8000
CMD ["python", "-m", "config.serve", "--host", "0.0.0.0", "--port", "8000"]
