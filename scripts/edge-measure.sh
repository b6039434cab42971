#!/usr/bin/env bash
# edge-measure.sh: the edge measurements of issues 10, 18 and 29 against a
# real ticketd binary on PostgreSQL, loopback only, bounded in time.
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
# 3. Issue 29's attacks (docs/perf.md, "Edge measurement"):
#      burst     on an idle server with the default limits, A's 16
#                concurrent create_ticket calls, then 24 identical ones (one
#                operation_id): every call served, none refused, and the
#                identical ones make one ticket (counted with psql).
#    Then one server with the rate buckets off (so that a refusal of B can
#    only be admission's), trackers on 127.0.0.1 and webhooks to loopback;
#    B's create p50 and p99 alone, then under each of A's attacks:
#      tracker   15 concurrent MCP creates into a GitHub-backed project
#                whose tracker (a listener here) accepts and never answers;
#      rest      64 loops of GET /api/v1/tickets?limit=100&query=large (about
#                2 MB a page), once with A's read-write token and once with
#                a read-only one;
#      receiver  A's webhook to a listener that accepts and never answers,
#                and A creating tickets for it; B's webhook to a receiver
#                that answers at once. Measured: B's delivery latency
#                (ticket created_at to receipt) of 100 paced creates, alone
#                and under the attack.
#    One table at the end: B's p50 and p99 alone and under each attack,
#    their ratios (for a person to read; no ratio fails the script) and
#    B's refusals.
#
# The script fails, rather than print a figure that measured nothing, when an
# attack did not run as described: a flood or hostile-list session that did
# not open, a worker that stopped, a failure other than rate_limited, a flood
# still connecting when B started, no stalled upload still held when B
# started, a burst call refused or a second ticket from the identical ones,
# fewer tracker connections held than A's tracker cap (4) when B started, a
# REST list loop that got no full page or an answer other than 200 or 429,
# or fewer than 8 webhook deliveries hanging when B started.
#
# Needs PostgreSQL at $PGURL (default postgres://postgres:postgres@127.0.0.1:5432),
# jq, curl and python3 (scripts/edge-measure.py: the listeners, the receiver
# and the latency figures); creates, then drops, one database. Ports PORT
# to PORT+3 on 127.0.0.1.
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
HELPER=$(dirname "$0")/edge-measure.py
SERVER=
STALLS=()
HELPERS=() # the listeners and the receiver
cleanup() {
	for p in "${STALLS[@]}" "${HELPERS[@]}"; do kill "$p" 2>/dev/null || true; done
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
# The table: one tab-separated line per attack in $WORK/table.
x() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }
f() { awk -v a="$1" 'BEGIN { if (a == "-") print a; else printf "%.1f", a }'; }
row() { # ATTACK ALONE_P50 UNDER_P50 ALONE_P99 UNDER_P99 REFUSED
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$(f "$2")" "$(f "$3")" "$(x "$3" "$2")" \
		"$(f "$4")" "$(f "$5")" "$(x "$5" "$4")" "$6" >>"$WORK/table"
}
# b_row ATTACK ALONE_LABEL UNDER_LABEL TOOL: a row from tenant_b's reports.
b_row() {
	local a="$WORK/b-$2-$4.json" u="$WORK/b-$3-$4.json"
	row "$1" "$(jq -r .latency.all.p50_ms "$a")" "$(jq -r .latency.all.p50_ms "$u")" \
		"$(jq -r .latency.all.p99_ms "$a")" "$(jq -r .latency.all.p99_ms "$u")" \
		"$(jq -r '([.tool_errors[]] | add // 0) + .transport_errors' "$u")"
}

"$BIN" migrate >/dev/null
for t in a b; do "$BIN" projects create --tenant "$t" --id support --key SUP --name Support >/dev/null; done
ADMIN_A=$(token a "tickets:admin")
TOK_A=$(token a "tickets:read tickets:write")
TOK_B=$(token b "tickets:read tickets:write")

# seed_large files A's 400 tickets with 20000-character descriptions, once.
SEEDED=
seed_large() {
	[ -n "$SEEDED" ] && return
	local desc
	desc=$(head -c 20000 /dev/zero | tr '\0' 'd')
	printf '{"project_id":"support","title":"large","description":"%s"}' "$desc" >"$WORK/ticket.json"
	seq 400 | xargs -P 8 -I{} sh -c 'curl -fs -o /dev/null -X POST -H "Authorization: Bearer $0" -H "Content-Type: application/json" \
		-H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" --data-binary @"$1" "http://127.0.0.1:$2/api/v1/tickets"' "$ADMIN_A" "$WORK/ticket.json" "$PORT"
	SEEDED=1
}

if [ -z "${SKIP_HOSTILE:-}" ]; then
echo "== hostile reads"
start TICKETD_RATE_LIMIT_WRITES=0 TICKETD_RATE_LIMIT_READS=0
seed_large
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

b_row "flood, 400 creators (default limits)" alone flood create_ticket
b_row "lists, 64 MCP (default limits)" alone lists list_tickets
b_row "stalls, 104 uploads: create (default limits)" alone stalls create_ticket
b_row "stalls, 104 uploads: list (default limits)" alone stalls list_tickets

echo "== burst: tenant A alone on an idle server (default limits)"
start
# burst NAME ARGS: A's calls, all at once, each served: no refusal, no
# failure, one call per worker.
burst() {
	local name=$1; shift
	local out="$WORK/burst-$name.json" n
	"$LOAD" -url "$URL" -token "$TOK_A" -retry-ratio 0 -duration 30s -timeout 30s -json "$@" >"$out" 2>"$WORK/burst.err" ||
		{ cat "$WORK/burst.err" >&2; jq -c '{calls, tool_errors, transport_errors, timeouts, errors}' "$out" >&2 || true; fail "tenant A's burst $name was not all served"; }
	n=$(jq -r .workers "$out")
	jq -e --argjson n "$n" '.calls == $n and .created + .replayed == $n' "$out" >/dev/null ||
		fail "tenant A's burst $name: $(jq -c '{calls, created, replayed}' "$out"), want $n calls, each served"
	jq -r --arg n "$name" '"   A burst \($n): \(.calls) calls, \(.created) created, \(.replayed) replayed, refused \(.tool_errors)"' "$out"
	row "burst $name (A's own calls)" - "$(jq -r .latency.all.p50_ms "$out")" - "$(jq -r .latency.all.p99_ms "$out")" 0
}
burst 16 -workers 16 -requests 16
OPID=$(cat /proc/sys/kernel/random/uuid)
burst "24 identical" -workers 24 -requests 24 -operation-id "$OPID"
jq -e '.created == 1' "$WORK/burst-24 identical.json" >/dev/null || fail "24 identical creates: $(jq -r .created "$WORK/burst-24 identical.json") answered as created, want 1"
n=$(psql "$TICKETD_DATABASE_URL" -Atc "SELECT count(*) FROM tickets WHERE tenant_id = 'a' AND title = 'load test ${OPID:0:8}'")
[ "$n" = 1 ] || fail "24 identical creates left $n tickets, want 1"
echo "   the identical creates left $n ticket"

echo "== issue 29's attacks (rate buckets off; trackers on 127.0.0.1; webhooks to loopback)"
TRACKER_PORT=$((PORT + 1)) HOOK_PORT=$((PORT + 2)) RECV_PORT=$((PORT + 3))
python3 "$HELPER" hang "$TRACKER_PORT" "$WORK/tracker.held" 300 & HELPERS+=($!)
python3 "$HELPER" hang "$HOOK_PORT" "$WORK/hook.held" 300 & HELPERS+=($!)
python3 "$HELPER" receive "$RECV_PORT" "$WORK/receipts" 300 & HELPERS+=($!)
start TICKETD_RATE_LIMIT_WRITES=0 TICKETD_RATE_LIMIT_READS=0 TICKETD_WEBHOOK_ALLOW_PRIVATE=on \
	TICKETD_TRACKER_CREDENTIALS=edge=EDGE_TRACKER_TOKEN EDGE_TRACKER_TOKEN=edge-measure-not-a-token \
	TICKETD_TRACKER_HOSTS=127.0.0.1 TICKETD_TRACKER_ALLOW_PRIVATE=on
for _ in $(seq 50); do [ -s "$WORK/tracker.held" ] && [ -s "$WORK/hook.held" ] && curl -fs -o /dev/null -X POST -d '{}' "http://127.0.0.1:$RECV_PORT/ready" && break; sleep 0.1; done
held() { cut -d' ' -f1 "$WORK/$1.held"; }
# api POST|GET PATH TOKEN [BODY]: the status code; the body goes to $WORK/body.
api() {
	local body=()
	[ $# -gt 3 ] && body=(--data-binary "$4")
	curl -s -o "$WORK/body" -w '%{http_code}' --max-time 30 -X "$1" -H "Authorization: Bearer $3" -H "Content-Type: application/json" \
		-H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" "${body[@]}" "http://127.0.0.1:$PORT/api/v1$2"
}
seed_large
tenant_b alone29 create_ticket '{}'

echo "-- tenant A: 15 MCP creates into a project whose tracker never answers"
code=$(api POST /projects "$ADMIN_A" "{\"id\":\"hang\",\"key\":\"HANG\",\"name\":\"Hanging tracker\",\"backend\":{\"kind\":\"github\",\"repository\":\"edge/hang\",\"api_url\":\"http://127.0.0.1:$TRACKER_PORT/\",\"credential\":\"edge\"}}")
[ "$code" = 201 ] || fail "the tracker-backed project was not created: $code $(cat "$WORK/body")"
"$LOAD" -url "$URL" -token "$TOK_A" -project hang -workers 15 -duration 20s -timeout 45s -retry-ratio 0 -json -expect-rate-limited \
	>"$WORK/tracker.json" 2>"$WORK/tracker.err" &
TRACKER=$!
sleep 4
[ "$(held tracker)" -ge 4 ] || fail "the tracker listener held $(held tracker) connections when tenant B started, want A's tracker cap, 4"
echo "   tracker listener: $(held tracker) connections held as B starts"
tenant_b tracker create_ticket '{}'
echo "   tracker listener: $(held tracker) connections held as B ends"
rc=0; wait "$TRACKER" || rc=$?
# A's creates fail by design (the tracker never answers): exit 1 is the
# attack, anything above it a load that did not run.
[ "$rc" -le 1 ] || { cat "$WORK/tracker.err" >&2; fail "tenant A's tracker creates did not run as configured (ticketd-load exited $rc)"; }
jq -e '.calls >= .workers' "$WORK/tracker.json" >/dev/null || fail "tenant A's tracker attack made fewer calls than workers"
jq -r '"   A tracker: \(.workers) workers, \(.calls) calls, \(.created) created, timeouts \(.timeouts), errors \(.tool_errors)"' "$WORK/tracker.json"
b_row "hanging tracker, 15 MCP creates" alone29 tracker create_ticket

# rest_lists NAME TOKEN: 64 loops of A's 100-ticket REST pages, each at
# most 400 pages and 25 s; B creates meanwhile.
rest_lists() {
	local name=$1 tok=$2 loops=() i bad
	echo "-- tenant A: 64 REST list loops ($name token)"
	for i in $(seq 64); do
		(
			end=$((SECONDS + 25))
			for _ in $(seq 400); do
				[ "$SECONDS" -lt "$end" ] || break
				curl -s -o /dev/null --max-time 30 -w '%{http_code} %{size_download}\n' -H "Authorization: Bearer $tok" \
					"http://127.0.0.1:$PORT/api/v1/tickets?limit=100&query=large"
			done >"$WORK/rest-$name.$i"
		) &
		loops+=($!)
	done
	sleep 5
	tenant_b "rest-$name" create_ticket '{}'
	for i in "${loops[@]}"; do wait "$i"; done
	for i in $(seq 64); do
		awk '$1 == 200 && $2 > 1000000 { ok = 1 } END { exit !ok }' "$WORK/rest-$name.$i" || fail "REST list loop $i ($name) got no full page"
	done
	bad=$(cat "$WORK/rest-$name".* | awk '$1 != 200 && $1 != 429' | head -3)
	[ -z "$bad" ] || fail "REST list loops ($name) got answers other than 200 or 429: $bad"
	cat "$WORK/rest-$name".* | awk -v n="$name" '{ c[$1]++ } END { printf "   A rest (%s): %d pages of 200, %d refused (429)\n", n, c[200], c[429] }'
	b_row "REST lists, 64 loops ($name token)" alone29 "rest-$name" create_ticket
}
rest_lists read-write "$TOK_A"
rest_lists read-only "$(token a "tickets:read")"

echo "-- tenant A's webhook receiver accepts and never answers"
ADMIN_B=$(token b "tickets:admin")
code=$(api POST /webhooks "$ADMIN_B" "{\"url\":\"http://127.0.0.1:$RECV_PORT/b\",\"events\":[\"ticket.created\"]}")
[ "$code" = 201 ] || fail "tenant B's webhook was not registered: $code $(cat "$WORK/body")"
# deliveries LABEL: B files 100 tickets over REST, about 10 a second, then
# waits up to 90 s for their deliveries; the latency of each (created_at to
# receipt) goes to $WORK/hook-LABEL.json.
deliveries() {
	local label=$1 keys="$WORK/keys-$1" refused=0 code
	: >"$keys"
	for _ in $(seq 100); do
		code=$(api POST /tickets "$ADMIN_B" '{"project_id":"support","title":"delivery"}')
		case $code in
		201) jq -r '"\(.key) \(.created_at)"' "$WORK/body" >>"$keys" ;;
		429) refused=$((refused + 1)) ;;
		*) fail "tenant B's create ($label) answered $code: $(cat "$WORK/body")" ;;
		esac
		sleep 0.1
	done
	for _ in $(seq 90); do
		[ "$(python3 "$HELPER" latency "$WORK/receipts" "$keys" "$(date +%s.%N)" | jq .missing)" = 0 ] && break
		sleep 1
	done
	python3 "$HELPER" latency "$WORK/receipts" "$keys" "$(date +%s.%N)" | jq -c --argjson r "$refused" '. + {refused: $r}' >"$WORK/hook-$label.json"
	jq -r --arg l "$label" '"   B deliveries \($l): p50 \(.p50_ms) ms, p90 \(.p90_ms) ms, p99 \(.p99_ms) ms, \(.n) tickets, \(.missing) undelivered after 90 s, refused \(.refused)"' "$WORK/hook-$label.json"
}
deliveries alone
code=$(api POST /webhooks "$ADMIN_A" "{\"url\":\"http://127.0.0.1:$HOOK_PORT/a\",\"events\":[\"ticket.created\"]}")
[ "$code" = 201 ] || fail "tenant A's webhook was not registered: $code $(cat "$WORK/body")"
"$LOAD" -url "$URL" -token "$TOK_A" -workers 4 -duration 30s -requests 3000 -retry-ratio 0 -json >"$WORK/hook-a.json" 2>"$WORK/hook-a.err" &
HOOKLOAD=$!
sleep 5
[ "$(held hook)" -ge 8 ] || fail "tenant A's receiver held $(held hook) deliveries when tenant B started, want at least 8"
echo "   A's receiver: $(held hook) deliveries hanging as B starts"
deliveries receiver
echo "   A's receiver: $(held hook) deliveries hanging, $(cut -d' ' -f2 "$WORK/hook.held") accepted in all"
wait "$HOOKLOAD" || { cat "$WORK/hook-a.err" >&2; fail "tenant A's creates for its receiver did not run as described"; }
jq -r '"   A creates for its receiver: \(.created) tickets"' "$WORK/hook-a.json"
row "hanging receiver: B's delivery latency" "$(jq -r .p50_ms "$WORK/hook-alone.json")" "$(jq -r .p50_ms "$WORK/hook-receiver.json")" \
	"$(jq -r .p99_ms "$WORK/hook-alone.json")" "$(jq -r .p99_ms "$WORK/hook-receiver.json")" \
	"$(jq -r '"\(.refused), \(.missing) undelivered"' "$WORK/hook-receiver.json")"
echo "   (p90 of B's deliveries: alone $(jq -r .p90_ms "$WORK/hook-alone.json") ms, under attack $(jq -r .p90_ms "$WORK/hook-receiver.json") ms)"

echo "== tenant B under each attack, against alone in the same run (ms; goal: p50 within 3x, p99 within 5x)"
{
	printf 'attack\tB p50 alone\tunder\tratio\tB p99 alone\tunder\tratio\tB refused\n'
	cat "$WORK/table"
} | awk -F'\t' '{ printf "   %-44s %11s %9s %6s %11s %9s %6s  %s\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
echo "   (rows marked default limits count B's own 50 writes/s bucket among its refusals; the others run with the buckets off)"
