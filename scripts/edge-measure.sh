#!/usr/bin/env bash
# edge-measure.sh: the issue-10 measurements against a real ticketd binary on
# PostgreSQL, loopback only, bounded in time.
#
#   scripts/edge-measure.sh BINARY LOAD_BINARY
#
# 1. Hostile reads: 400 tickets with 20000-character descriptions, then 40
#    concurrent list_tickets (limit 200) for 20 s; peak RSS (VmHWM) of the
#    server. Read rate limits are off for this run, so only the response
#    and body bounds keep memory down.
# 2. Noisy neighbour: tenant B's create_ticket latency alone (1 worker,
#    15 s), then again while tenant A floods with 400 concurrent creators,
#    with the default limits (50 writes/s, concurrency 64 per tenant).
#
# Needs PostgreSQL at $PGURL (default postgres://postgres:postgres@127.0.0.1:5432)
# and creates, then drops, one database.
set -euo pipefail
BIN=${1:?ticketd binary}
LOAD=${2:?ticketd-load binary}
PGURL=${PGURL:-postgres://postgres:postgres@127.0.0.1:5432}
DBNAME=ticketd_edge_$$
PORT=${PORT:-18610}
WORK=$(mktemp -d)
export TICKETD_DATABASE_URL="$PGURL/$DBNAME?sslmode=disable"
export TICKETD_JWT_HS256_SECRET=edge-measure-secret-0123456789abcdef
export TICKETD_JWT_ISSUER=edge-measure
export TICKETD_ADDR=127.0.0.1:$PORT
export TICKETD_LOG_LEVEL=error
psql "$PGURL/postgres?sslmode=disable" -qc "CREATE DATABASE $DBNAME" >/dev/null
SERVER=
cleanup() {
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
	psql "$PGURL/postgres?sslmode=disable" -qc "DROP DATABASE IF EXISTS $DBNAME WITH (FORCE)" >/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

start() { # env assignments for this run
	[ -n "$SERVER" ] && kill "$SERVER" && wait "$SERVER" 2>/dev/null || true
	env "$@" "$BIN" serve 2>"$WORK/server.log" &
	SERVER=$!
	for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null && return; sleep 0.1; done
	echo "server did not start" >&2; cat "$WORK/server.log" >&2; exit 1
}
token() { "$BIN" token --tenant "$1" --subject measure --scope "$2" 2>/dev/null; }
# load runs ticketd-load. Failed calls (exit 1) are part of what is measured
# here (rate limits answer some calls with errors); anything else, above
# all a load that did not run as configured (exit 3: sessions that never
# connected, workers that stopped), ends the measurement, since its figures
# would describe another load.
load() {
	local rc=0
	"$LOAD" "$@" || rc=$?
	if [ "$rc" -gt 1 ]; then
		echo "edge-measure: ticketd-load exited $rc: this load did not run as configured; no figures reported" >&2
		exit 1
	fi
}

"$BIN" migrate >/dev/null
for t in a b; do "$BIN" projects create --tenant "$t" --id support --key SUP --name Support >/dev/null; done
ADMIN_A=$(token a "tickets:admin")
TOK_A=$(token a "tickets:read tickets:write")
TOK_B=$(token b "tickets:read tickets:write")

if [ -z "${SKIP_HOSTILE:-}" ]; then
echo "== hostile reads"
start TICKETD_RATE_LIMIT_WRITES=0 TICKETD_RATE_LIMIT_READS=0
DESC=$(head -c 20000 /dev/zero | tr '\0' 'd')
printf '{"project_id":"support","title":"large","description":"%s"}' "$DESC" >"$WORK/ticket.json"
seq 400 | xargs -P 8 -I{} sh -c 'curl -fs -o /dev/null -X POST -H "Authorization: Bearer $0" -H "Content-Type: application/json" \
	-H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" --data-binary @"$1" "http://127.0.0.1:$2/api/v1/tickets"' "$ADMIN_A" "$WORK/ticket.json" "$PORT"
start TICKETD_RATE_LIMIT_WRITES=0 TICKETD_RATE_LIMIT_READS=0
load -url "http://127.0.0.1:$PORT/mcp" -token "$TOK_A" -tool list_tickets -args '{"limit":200}' \
	-workers 40 -duration 20s -timeout 30s -server-pid "$SERVER"
fi

echo "== noisy neighbour: tenant B alone"
start
load -url "http://127.0.0.1:$PORT/mcp" -token "$TOK_B" -workers 1 -duration 15s -retry-ratio 0
echo "== noisy neighbour: tenant B while tenant A floods with 400 creators"
load -url "http://127.0.0.1:$PORT/mcp" -token "$TOK_A" -workers 400 -duration 25s -retry-ratio 0 >"$WORK/flood.txt" 2>&1 &
FLOOD=$!
sleep 5
# The flood must be running (all its sessions connected) before B's figures
# can be read as "under a flood"; a flood that aborted at connect has ended
# by now.
if ! kill -0 "$FLOOD" 2>/dev/null; then
	echo "edge-measure: the flood ended before tenant B started:" >&2
	cat "$WORK/flood.txt" >&2
	exit 1
fi
load -url "http://127.0.0.1:$PORT/mcp" -token "$TOK_B" -workers 1 -duration 15s -retry-ratio 0
for _ in $(seq 5); do curl -s -o /dev/null -w "readyz under the flood: %{http_code} in %{time_total}s\n" "http://127.0.0.1:$PORT/readyz"; done
FLOOD_RC=0
wait "$FLOOD" || FLOOD_RC=$?
echo "-- tenant A's flood:"
cat "$WORK/flood.txt"
if [ "$FLOOD_RC" -ne 0 ]; then
	echo "edge-measure: the flood did not run as configured; tenant B's figures above were not measured under it" >&2
	exit 1
fi
