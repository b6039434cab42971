#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers for the test suite and prints its URL.
# Order: TICKETD_TEST_DATABASE_URL if set; else 127.0.0.1:5432; else start the
# local cluster; else install PostgreSQL from the distribution and start it.
set -euo pipefail

default_url="postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"
url="${TICKETD_TEST_DATABASE_URL:-$default_url}"

answers() { pg_isready -q -d "$url" -t 3 2>/dev/null; }
log() { echo "ensure-postgres: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -n "${TICKETD_TEST_DATABASE_URL:-}" ]; then
  command -v pg_isready >/dev/null && ! answers && { log "nothing answers at TICKETD_TEST_DATABASE_URL"; exit 1; }
  echo "$url"; exit 0
fi

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  log "PostgreSQL is not installed; installing it from the distribution's packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi

if ! answers; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  log "starting the local PostgreSQL $version cluster"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
  for _ in $(seq 1 30); do answers && break; sleep 1; done
fi
answers || { log "PostgreSQL does not answer at 127.0.0.1:5432"; exit 1; }

# A fresh install authenticates TCP clients by password: give the postgres
# role the password in the URL (harmless where trust auth is configured).
if ! psql "$url" -Atqc 'select 1' >/dev/null 2>&1; then
  log "setting the postgres role's password for TCP access"
  as_root su postgres -c "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\"" >&2
fi
psql "$url" -Atqc 'select 1' >/dev/null
echo "$url"
