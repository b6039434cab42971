#!/usr/bin/env bash
# edge-measure.sh: the edge measurements of issues 10 and 18 against a real
# ticketd binary on PostgreSQL, loopback only, bounded in time.
#
#   scripts/edge-measure.sh BINARY LOAD_BINARY
#
# 1. Hostile reads: 400 tickets with 20000-character descriptions, then 40
#    concurrent list_tickets (limit 100, the most MCP allows) for 20 s; peak RSS (VmHWM) of the
#    server. Read rate limits are off for this run, so only the response
#    and body bounds keep memory down. (SKIP_HOSTILE=1 skips it, and with it
#    the large tickets the hostile-lists attack below lists.)
# 2. Noisy neighbours, with the default limits: tenant B's p50 alone (1
#    worker creating, 1 listing), then under each of tenant A's attacks:
#      flood   400 concurrent creators that ignore every refusal;
#      lists   64 concurrent list_tickets (limit 100, the most MCP allows) of A's large tickets;
#      stalls  104 uploads sent at 1 KiB/s (64 of 256 KiB, 40 of 8 KiB).
#    B's p50 counts only calls that succeeded; B's own 50 writes/s limit
#    refuses the rest of its creates, which is expected. Any other failure
#    of B (a 503, a refused session) fails the script.
#
# The script fails, rather than print a figure that measured nothing, when an
# attack did not run as described: a flood or hostile-list session that did
# not open, a worker that stopped, a failure other than rate_limited, a flood
# still connecting when B started, or no stalled upload still held when B
# started.
#
# Needs PostgreSQL at $PGURL (default postgres://postgres:postgres@127.0.0.1:5432)
# and jq; creates, then drops, one database.
set -euo pipefail
BIN=${1:?ticketd binary}
LOAD=${2:?ticketd-load binary}
PGURL=${PGURL:-postgres://postgres:postgres@127.0.0.1:5432}
DBNAME=ticketd_edge_$$
PORT=${PORT:-18610}
WORK=$(mktemp -d)
URL=http://127.0.0.1:$PORT/mcp
export TICKETD_DATABASE_URL="$PGURL/$DBNAME?sslmode=disable"
export TICKETD_JWT_HS256_SECRET=edge-measure-secret-0123456789abcdef
export TICKETD_JWT_ISSUER=edge-measure
export TICKETD_ADDR=127.0.0.1:$PORT
export TICKETD_LOG_LEVEL=error
psql "$PGURL/postgres?sslmode=disable" -qc "CREATE DATABASE $DBNAME" >/dev/null
SERVER=
STALLS=()
cleanup() {
	for p in "${STALLS[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
	psql "$PGURL/postgres?sslmode=disable" -qc "DROP DATABASE IF EXISTS $DBNAME WITH (FORCE)" >/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "edge-measure: FAIL: $*" >&2; exit 1; }

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

# attack NAME ARGS...: run ticketd-load as tenant A in the background; its
# JSON report goes to $WORK/NAME.json and its start time to $WORK/NAME.t0.
attack() {
	local name=$1; shift
	date +%s.%N >"$WORK/$name.t0"
	"$LOAD" -url "$URL" -token "$TOK_A" -json -expect-rate-limited "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" &
	ATTACK=$!
}
# attack_ran NAME PID: the attack ran as described: ticketd-load exited 0
# (every session opened, no worker stopped, nothing failed but
# rate_limited), it made calls, and it was done connecting 5 s after it
# started, when B began.
attack_ran() {
	local name=$1 pid=$2 end
	wait "$pid" || { cat "$WORK/$name.err" >&2; jq -c '{calls, tool_errors, transport_errors, stopped_workers, errors}' "$WORK/$name.json" >&2 || true; fail "tenant A's $name did not run as described (ticketd-load exited non-zero)"; }
	end=$(date +%s.%N)
	jq -e '.calls > 0' "$WORK/$name.json" >/dev/null || fail "tenant A's $name made no calls"
	local connect
	connect=$(jq -r --arg t0 "$(cat "$WORK/$name.t0")" --arg stop "$end" '(($stop|tonumber) - ($t0|tonumber)) - .wall_ms/1000' "$WORK/$name.json")
	awk -v c="$connect" 'BEGIN { exit !(c <= 5) }' || fail "tenant A's $name took ${connect}s to connect, so tenant B started before it"
	jq -r --arg n "$name" '"   A \($n): \(.workers) workers, \(.calls) calls, \(.created + .answered) served, refused \(.tool_errors)"' "$WORK/$name.json"
}
# tenant_b LABEL TOOL ARGS: tenant B, 1 worker for 10 s; prints and records
# the p50 of its successful calls; any failure but its own rate_limited
# fails the script.
tenant_b() {
	local label=$1 tool=$2 args=$3 out="$WORK/b-$1-$2.json"
	"$LOAD" -url "$URL" -token "$TOK_B" -workers 1 -duration 10s -retry-ratio 0 -json -expect-rate-limited \
		-tool "$tool" -args "$args" >"$out" 2>"$WORK/b.err" ||
		{ cat "$WORK/b.err" >&2; jq -c '{tool_errors, transport_errors, errors}' "$out" >&2 || true; fail "tenant B's $tool calls $label were refused or failed"; }
	jq -r --arg l "$label" --arg t "$tool" '"   B \($t) \($l): p50 \(.latency.all.p50_ms) ms, p99 \(.latency.all.p99_ms) ms, \(.latency.all.n) answered, refused \(.tool_errors)"' "$out"
}
p50() { jq -r '.latency.all.p50_ms' "$WORK/b-$1-$2.json"; }
ratio() { awk -v a="$(p50 "$1" "$2")" -v b="$(p50 alone "$2")" 'BEGIN { printf "%.1fx", (b > 0 ? a / b : 0) }'; }

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
load -url "$URL" -token "$TOK_A" -tool list_tickets -args '{"limit":100}' \
	-workers 40 -duration 20s -timeout 30s -server-pid "$SERVER"
fi

echo "== noisy neighbours (default limits)"
start
"$LOAD" -url "$URL" -token "$TOK_B" -workers 1 -requests 20 -retry-ratio 0 >/dev/null # B has tickets to list
tenant_b alone create_ticket '{}'
tenant_b alone list_tickets '{"limit":20}'

echo "-- tenant A floods with 400 creators"
attack flood -workers 400 -duration 25s -retry-ratio 0
FLOOD=$ATTACK
sleep 5
tenant_b flood create_ticket '{}'
for _ in $(seq 3); do curl -s -o /dev/null -w "   readyz under the flood: %{http_code} in %{time_total}s\n" "http://127.0.0.1:$PORT/readyz"; done
attack_ran flood "$FLOOD"

echo "-- tenant A runs 64 hostile lists (limit 100 of its large tickets)"
attack lists -workers 64 -duration 20s -timeout 30s -tool list_tickets -args '{"limit":100}'
LISTS=$ATTACK
sleep 5
tenant_b lists list_tickets '{"limit":20}'
attack_ran lists "$LISTS"

echo "-- tenant A stalls 104 uploads at 1 KiB/s"
head -c $((256 << 10)) /dev/zero | tr '\0' ' ' >"$WORK/big.json"
head -c $((8 << 10)) /dev/zero | tr '\0' ' ' >"$WORK/small.json"
for i in $(seq 104); do
	body=$WORK/big.json; [ "$i" -gt 64 ] && body=$WORK/small.json
	curl -s -o /dev/null --limit-rate 1k --max-time 60 -X POST -H "Authorization: Bearer $TOK_A" -H "Content-Type: application/json" \
		-H "Accept: application/json, text/event-stream" --data-binary @"$body" "$URL" &
	STALLS+=($!)
done
sleep 3
held=0
for p in "${STALLS[@]}"; do kill -0 "$p" 2>/dev/null && held=$((held + 1)); done
[ "$held" -gt 0 ] || fail "no stalled upload was still held when tenant B started"
echo "   A stalls: $held of 104 uploads still sending (the rest refused at A's own cap)"
tenant_b stalls create_ticket '{}'
tenant_b stalls list_tickets '{"limit":20}'
curl -s -o /dev/null -w "   readyz under the stalls: %{http_code}\n" "http://127.0.0.1:$PORT/readyz"
for p in "${STALLS[@]}"; do kill "$p" 2>/dev/null || true; done
STALLS=()

echo "== tenant B's p50 under each attack, against alone (goal: within 3x)"
echo "   create_ticket: alone $(p50 alone create_ticket) ms; flood $(p50 flood create_ticket) ms ($(ratio flood create_ticket)); stalls $(p50 stalls create_ticket) ms ($(ratio stalls create_ticket))"
echo "   list_tickets:  alone $(p50 alone list_tickets) ms; hostile lists $(p50 lists list_tickets) ms ($(ratio lists list_tickets)); stalls $(p50 stalls list_tickets) ms ($(ratio stalls list_tickets))"
