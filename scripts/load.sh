#!/usr/bin/env bash
# Builds ticketd and ticketd-load, starts a throwaway dev server on a free
# loopback port, runs the load generator against it with this script's
# arguments, then stops the server and removes everything it made.
#
#   scripts/load.sh -duration 10s -workers 8          # embedded SQLite
#   PG=1 scripts/load.sh -duration 10s -workers 8     # a fresh PostgreSQL database, dropped afterwards
#   DATABASE_URL=postgres://… scripts/load.sh …       # an existing database (left as it is)
#
# PG=1 creates the database on PG_ADMIN_URL (default: the local server the
# tests use). The exit status is the load generator's.
set -euo pipefail

cd "$(dirname "$0")/.."
log() { echo "load.sh: $*" >&2; }

tmp=$(mktemp -d)
server_pid=""
created_db=""
admin_url="${PG_ADMIN_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable}"

cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ -n "$created_db" ]; then
    psql -q -d "$admin_url" -c "DROP DATABASE IF EXISTS $created_db WITH (FORCE)" >/dev/null || log "could not drop database $created_db"
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

log "building into $tmp"
go build -o "$tmp/ticketd" ./cmd/ticketd
go build -o "$tmp/ticketd-load" ./cmd/ticketd-load

database_url="${DATABASE_URL:-}"
if [ -z "$database_url" ] && [ "${PG:-}" = 1 ]; then
  created_db="ticketd_load_$$"
  psql -q -d "$admin_url" -c "CREATE DATABASE $created_db" >/dev/null
  # Same server and credentials as the admin URL, the new database's name.
  database_url=$(echo "$admin_url" | sed -E "s#/[^/?]+(\?|$)#/$created_db\1#")
fi
if [ -n "$database_url" ]; then
  export TICKETD_DATABASE_URL="$database_url"
  log "database: PostgreSQL ($(echo "$database_url" | sed -E 's#//[^@]*@#//…@#'))"
else
  unset TICKETD_DATABASE_URL
  log "database: SQLite in $tmp/data"
fi

# A free port from the kernel; the tiny window before the server binds it
# is acceptable for a local benchmark.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
addr="127.0.0.1:$port"

"$tmp/ticketd" serve --dev --data-dir "$tmp/data" --addr "$addr" --log-level warn >"$tmp/server.log" 2>&1 &
server_pid=$!

for _ in $(seq 1 100); do
  curl -fsS "http://$addr/healthz" >/dev/null 2>&1 && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    log "the server exited:"; cat "$tmp/server.log" >&2; exit 1
  fi
  sleep 0.1
done
curl -fsS "http://$addr/healthz" >/dev/null || { log "no answer from http://$addr/healthz"; cat "$tmp/server.log" >&2; exit 1; }

# The token's audience derives from --addr, so it must be the server's.
TICKETD_TOKEN=$("$tmp/ticketd" token --dev --data-dir "$tmp/data" --addr "$addr" \
  --tenant demo --subject load --scope "tickets:read tickets:write")
export TICKETD_TOKEN

status=0
"$tmp/ticketd-load" -url "http://$addr/mcp" -project support "$@" || status=$?
exit "$status"
