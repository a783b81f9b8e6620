#!/bin/sh
# The image's entrypoint (Dockerfile ENTRYPOINT): the first argument says what the container runs.
#
#   web                              the web server: python -m config.serve (uvicorn, WEB_CONCURRENCY
#                                    processes) on LISTEN_HOST:PORT (0.0.0.0:8000)
#   worker QUEUES [celery options]   a Celery worker consuming QUEUES (comma-separated: ingest,
#                                    celery,alerts or notify; docs/scaling.md "Sharding and queues"),
#                                    named QUEUES@hostname with commas as dashes (ingest@pod,
#                                    celery-alerts@pod) so `celery inspect ping -d` can find it
#   beat                             Celery beat (exactly one per installation); its schedule file
#                                    goes in BEAT_SCHEDULE_DIR (/app/var/beat, an emptyDir on Kubernetes)
#   migrate                          manage.py migrate under a Postgres advisory lock: the web pods'
#                                    init container, pods starting together take turns
#   wait-for-migrations              returns once no migration is unapplied (workers' and beat's init
#                                    container); gives up after MIGRATIONS_WAIT_SECONDS (600)
#   anything else                    run as given (python manage.py ..., celery ...), as docker-compose.yml does
#
# Every mode execs, so the process it starts is PID 1 of the container and gets the signals.
set -eu

mode="${1:-web}"
[ "$#" -gt 0 ] && shift

case "$mode" in
web)
    exec python -m config.serve --host "${LISTEN_HOST:-0.0.0.0}" --port "${PORT:-8000}" "$@"
    ;;
worker)
    if [ "$#" -eq 0 ]; then
        echo "usage: worker QUEUES [celery worker options], e.g. worker ingest --concurrency 1" >&2
        exit 2
    fi
    queues="$1"
    shift
    nodename="$(printf '%s' "$queues" | tr ',' '-')@%h"
    exec celery -A config worker -l "${LOG_LEVEL:-INFO}" -Q "$queues" -n "$nodename" "$@"
    ;;
beat)
    exec celery -A config beat -l "${LOG_LEVEL:-INFO}" \
        -s "${BEAT_SCHEDULE_DIR:-/app/var/beat}/celerybeat-schedule" "$@"
    ;;
migrate)
    exec python manage.py migrate_locked "$@"
    ;;
wait-for-migrations)
    deadline=$(($(date +%s) + ${MIGRATIONS_WAIT_SECONDS:-600}))
    until python manage.py migrate --check >/dev/null; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "migrations still unapplied after ${MIGRATIONS_WAIT_SECONDS:-600} s" >&2
            exit 1
        fi
        echo "waiting for the web pods' migrate init container to apply the migrations"
        sleep "${MIGRATIONS_POLL_SECONDS:-5}"
    done
    ;;
*)
    exec "$mode" "$@"
    ;;
esac
