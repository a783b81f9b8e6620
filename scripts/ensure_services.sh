#!/usr/bin/env bash
# Make sure what the app needs is installed and running: Postgres, Redis,
# Prometheus (+ promtool), and for tests Alertmanager, Chromium and VictoriaMetrics.
# On Debian/Ubuntu as root, missing packages are installed with apt-get and
# stopped services are started; elsewhere a clear message says what to install.
# Usage: scripts/ensure_services.sh [--test]
set -euo pipefail
WANT_TEST_TOOLS=0
[[ "${1:-}" == "--test" ]] && WANT_TEST_TOOLS=1

PG_HOST=${PGHOST:-127.0.0.1}
PG_PORT=${PGPORT:-5432}
REDIS_HOST=127.0.0.1
REDIS_PORT=6379

say() { echo "[setup] $*"; }
can_apt() { [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; }
APT_UPDATED=0
apt_install() {
  if ! can_apt; then
    say "missing: $* — install it with your package manager (Debian/Ubuntu: apt-get install $*)"
    return 1
  fi
  if [[ $APT_UPDATED -eq 0 ]]; then
    say "apt-get update"; apt-get update -qq >/dev/null; APT_UPDATED=1
  fi
  say "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# --- Postgres ---------------------------------------------------------------
if ! port_open "$PG_HOST" "$PG_PORT"; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then apt_install postgresql; fi
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    for version in $(ls /etc/postgresql 2>/dev/null); do
      say "starting PostgreSQL $version"
      pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    done
  fi
  for _ in $(seq 1 30); do port_open "$PG_HOST" "$PG_PORT" && break; sleep 1; done
  port_open "$PG_HOST" "$PG_PORT" || { say "PostgreSQL is not reachable on $PG_HOST:$PG_PORT"; exit 1; }
fi

# --- Redis ------------------------------------------------------------------
if ! port_open "$REDIS_HOST" "$REDIS_PORT"; then
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  say "starting redis-server"
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir /tmp --logfile /tmp/clusterwatch-redis.log
  for _ in $(seq 1 20); do port_open "$REDIS_HOST" "$REDIS_PORT" && break; sleep 0.5; done
  port_open "$REDIS_HOST" "$REDIS_PORT" || { say "Redis is not reachable on $REDIS_HOST:$REDIS_PORT"; exit 1; }
fi

# --- Prometheus -------------------------------------------------------------
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  apt_install prometheus || { say "install Prometheus (prometheus and promtool on PATH)"; exit 1; }
  # Debian's package may start a system Prometheus on :9090; the app starts its own.
fi

if [[ $WANT_TEST_TOOLS -eq 1 ]]; then
  missing=()
  command -v prometheus-alertmanager >/dev/null 2>&1 || command -v alertmanager >/dev/null 2>&1 \
    || missing+=(prometheus-alertmanager)
  [[ -x /usr/bin/chromium ]] || missing+=(chromium)
  # Debian's package may start a system VictoriaMetrics on :8428; tests start their own
  # (tests/support/victoria.py) on a free port with their own data directory.
  [[ -x /usr/bin/victoria-metrics ]] || missing+=(victoria-metrics)
  if [[ ${#missing[@]} -gt 0 ]]; then
    apt_install "${missing[@]}" || { say "tests need: ${missing[*]}"; exit 1; }
  fi
fi
say "services ok: postgres $PG_HOST:$PG_PORT, redis $REDIS_HOST:$REDIS_PORT, $(prometheus --version 2>&1 | head -1)"
