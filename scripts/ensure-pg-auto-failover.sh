#!/usr/bin/env bash
# Makes sure pg_auto_failover is installed for the failover test and prints
# the path of its pg_autoctl. It uses TICKETD_PG_AUTOCTL, then pg_autoctl on
# the PATH or beside the PostgreSQL binaries; only when none exists does it install
# Debian's postgresql-VERSION-auto-failover and pg-auto-failover-cli with
# apt-get, for the PostgreSQL major version whose server binaries are here.
# It installs nothing else and never touches a running server: the packages
# add an extension and a command, and the test runs its own clusters on
# their own ports. It exits 1 with the reason on stderr when pg_autoctl is
# missing and cannot be installed (no apt-get, neither root nor passwordless
# sudo, or no server binaries to match); make test then skips the test with
# that reason.
set -euo pipefail

log() { echo "ensure-pg-auto-failover: $*" >&2; }

if [ -n "${TICKETD_PG_AUTOCTL:-}" ]; then
  [ -x "$TICKETD_PG_AUTOCTL" ] || { log "TICKETD_PG_AUTOCTL=$TICKETD_PG_AUTOCTL is not an executable"; exit 1; }
  echo "$TICKETD_PG_AUTOCTL"; exit 0
fi

# found: pg_autoctl on the PATH (Debian's pg-auto-failover-cli puts it in
# /usr/bin), else the newest beside a PostgreSQL server.
found() {
  local p
  command -v pg_autoctl 2>/dev/null && return 0
  for p in $(ls -d /usr/lib/postgresql/*/bin/pg_autoctl 2>/dev/null | sort -V -r); do
    [ -x "$p" ] && { echo "$p"; return 0; }
  done
  return 1
}
if path=$(found); then echo "$path"; exit 0; fi

version=$(ls -d /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sed -E 's#/usr/lib/postgresql/([^/]+)/bin/postgres#\1#' | sort -V | tail -n 1)
if [ -z "$version" ]; then
  log "pg_auto_failover is missing and no Debian PostgreSQL server (/usr/lib/postgresql/VERSION/bin/postgres) is installed to match it"
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  log "pg_auto_failover is missing and apt-get is not available: install pg_auto_failover for PostgreSQL $version and set TICKETD_PG_AUTOCTL to its pg_autoctl"
  exit 1
fi
if [ "$(id -u)" = 0 ]; then
  as_root() { "$@"; }
elif sudo -n true 2>/dev/null; then
  as_root() { sudo -n "$@"; }
else
  log "pg_auto_failover is missing and installing it needs root: sudo apt-get install postgresql-$version-auto-failover pg-auto-failover-cli"
  exit 1
fi
log "pg_auto_failover is missing; installing Debian's postgresql-$version-auto-failover and pg-auto-failover-cli with apt-get (apt-get update first)"
# Another apt run (a parallel CI step) may hold the dpkg lock for a while.
as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
  "postgresql-$version-auto-failover" pg-auto-failover-cli >&2
found || { log "installed the packages but found no pg_autoctl"; exit 1; }
