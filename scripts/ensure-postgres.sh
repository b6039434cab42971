#!/usr/bin/env bash
# Finds the PostgreSQL server the test suite uses and prints its URL.
#
# It uses TICKETD_TEST_DATABASE_URL if set, else postgres@127.0.0.1:5432, and
# only checks that the server answers and accepts the URL's login. It never
# changes roles, passwords or configuration, never starts a cluster and never
# installs packages — unless TICKETD_INSTALL_POSTGRES=1 says this machine is a
# throwaway Debian-like CI host (.ci/run sets it): then, and only when nothing
# answers, it starts the local cluster or installs PostgreSQL from the
# distribution, and gives the postgres role of a cluster it just installed the
# password in the default URL.
set -euo pipefail

default_url="postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable"
url="${TICKETD_TEST_DATABASE_URL:-$default_url}"

log() { echo "ensure-postgres: $*" >&2; }

# answers: the server accepts connections (pg_isready, or a bare TCP
# connect where only the server and not the client tools are installed).
answers() {
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -d "$url" -t 3 2>/dev/null
  else
    local hostport="${url#*@}"
    hostport="${hostport%%/*}"
    (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null
  fi
}

# logs_in: the URL's credentials work (only possible with psql; without it
# the tests themselves report a failed login).
logs_in() {
  ! command -v psql >/dev/null 2>&1 || psql "$url" -Atqc 'select 1' >/dev/null 2>&1
}

if answers; then
  if ! logs_in; then
    log "PostgreSQL answers but refuses the login in $(echo "$url" | sed -E 's#//[^@]*@#//…@#'); set TICKETD_TEST_DATABASE_URL to a URL whose user may create databases"
    exit 1
  fi
  echo "$url"
  exit 0
fi

if [ -n "${TICKETD_TEST_DATABASE_URL:-}" ] || [ "${TICKETD_INSTALL_POSTGRES:-}" != 1 ]; then
  log "no PostgreSQL answers at $(echo "$url" | sed -E 's#//[^@]*@#//…@#'): start one (Debian/Ubuntu: sudo apt-get install postgresql; macOS: brew install postgresql@15 && brew services start postgresql@15; containers: docker run -d -p 127.0.0.1:5432:5432 -e POSTGRES_PASSWORD=postgres postgres:15), or set TICKETD_TEST_DATABASE_URL, or run make test-short to skip the PostgreSQL tests"
  exit 1
fi

# From here on: TICKETD_INSTALL_POSTGRES=1 on a Debian-like machine.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
installed_now=""
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  log "TICKETD_INSTALL_POSTGRES=1: installing PostgreSQL from the distribution's packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  installed_now=1
fi
version=$(ls /etc/postgresql | sort -V | tail -n 1)
log "TICKETD_INSTALL_POSTGRES=1: starting the local PostgreSQL $version cluster"
as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
for _ in $(seq 1 30); do answers && break; sleep 1; done
answers || { log "PostgreSQL $version does not answer at 127.0.0.1:5432 after starting it"; exit 1; }

# A fresh Debian cluster authenticates TCP clients by password. Only a
# cluster installed by this very run gets one: an existing server's accounts
# are never touched.
if [ -n "$installed_now" ] && ! logs_in; then
  log "setting the password of the freshly installed cluster's postgres role"
  as_root su postgres -c "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\"" >&2
fi
logs_in || { log "PostgreSQL answers but refuses the login in the default URL; set TICKETD_TEST_DATABASE_URL"; exit 1; }
echo "$url"
