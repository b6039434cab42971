#!/usr/bin/env bash
# Builds ticketd and ticketd-load, starts a throwaway dev server on a free
# loopback port, runs the load generator against it with this script's
# arguments, then stops the server and removes everything it made. It needs
# only Go; PG=1 also needs psql, to create and drop the database.
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
go build -o "$tmp/ticketd-load" ./tools/ticketd-load

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

# Port 0: the kernel picks a free port, and the server's "listening" log
# line says which. Tokens carry the audience derived from --addr, so the
# token below is minted for the same 127.0.0.1:0.
addr="127.0.0.1:0"
"$tmp/ticketd" serve --dev --data-dir "$tmp/data" --addr "$addr" --log-level info >"$tmp/server.out" 2>"$tmp/server.log" &
server_pid=$!

url=""
for _ in $(seq 1 300); do
  url=$(sed -n 's/.*msg=listening url=\([^ ]*\).*/\1/p' "$tmp/server.log")
  [ -n "$url" ] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    log "the server exited:"; cat "$tmp/server.log" >&2; exit 1
  fi
  sleep 0.1
done
[ -n "$url" ] || { log "the server did not start listening within 30s"; cat "$tmp/server.log" >&2; exit 1; }

TICKETD_TOKEN=$("$tmp/ticketd" token --dev --data-dir "$tmp/data" --addr "$addr" \
  --tenant demo --subject load --scope "tickets:read tickets:write" 2>/dev/null)
export TICKETD_TOKEN

status=0
"$tmp/ticketd-load" -url "$url/mcp" -project support "$@" || status=$?
exit "$status"
