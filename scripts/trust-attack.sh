#!/usr/bin/env bash
# trust-attack.sh: issue 28's reproductions, run as the hostile tenant ran
# them, against a real ticketd binary in production mode on PostgreSQL,
# loopback only, bounded in time (docs/security.md).
#
#   scripts/trust-attack.sh BINARY
#
# Each step prints what ticketd answered and fails the script if the attack
# worked: a project naming a server secret or a refused address is created,
# the agent's or an operator's token approves, a pruned write's lookup says
# "not found", or the raw listener on 127.0.0.1 that a tracker URL names
# hears a single connection.
#
# Needs PostgreSQL at $PGURL (default postgres://postgres@127.0.0.1:5432),
# curl and python3; creates, then drops, one database.
set -euo pipefail
BIN=${1:?ticketd binary}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
PORT=${PORT:-18181}
TRAP_PORT=${TRAP_PORT:-18282}
DBNAME=ticketd_trust_$$
WORK=$(mktemp -d)
BASE=http://127.0.0.1:$PORT
export TICKETD_DATABASE_URL="$PGURL/$DBNAME?sslmode=disable"
TICKETD_JWT_HS256_SECRET=$(head -c 32 /dev/urandom | base64)
TICKETD_APPROVAL_SECRET=$(head -c 32 /dev/urandom | base64)
TICKETD_CURSOR_SECRET=$(head -c 32 /dev/urandom | base64)
export TICKETD_JWT_HS256_SECRET TICKETD_APPROVAL_SECRET TICKETD_CURSOR_SECRET
export TICKETD_JWT_ISSUER=trust-attack TICKETD_ADDR=127.0.0.1:$PORT TICKETD_PUBLIC_URL=$BASE
export TRUST_ATTACK_GH_TOKEN=ghp_acme TICKETD_TRACKER_CREDENTIALS="gh=TRUST_ATTACK_GH_TOKEN@acme"

psql -q "$PGURL/postgres" -c "CREATE DATABASE $DBNAME" >/dev/null
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	psql -q "$PGURL/postgres" -c "DROP DATABASE IF EXISTS $DBNAME" >/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
failed=0
fail() { echo "ATTACK WORKED: $*"; failed=1; }

# The trap: a raw listener that counts every connection it accepts, for 60 s at most.
python3 - "$TRAP_PORT" >"$WORK/trap" <<'PY' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); s.settimeout(0.5)
n, end = 0, time.time() + 60
while time.time() < end:
    try:
        c, _ = s.accept(); n += 1; c.close()
    except socket.timeout:
        pass
    print(n, flush=True)
PY
pids+=($!)

"$BIN" serve >"$WORK/server.out" 2>"$WORK/server.err" &
pids+=($!)
for _ in $(seq 100); do curl -sf "$BASE/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "$BASE/healthz" >/dev/null || { cat "$WORK/server.err"; exit 1; }

tok() { "$BIN" token --tenant "$1" --subject "$2" --scope "$3" 2>/dev/null; }
uuid() { python3 -c 'import uuid; print(uuid.uuid4())'; }
# req METHOD PATH TOKEN [BODY [KEY]]: prints the status; the body is in $WORK/body.
req() {
	local args=(-s -o "$WORK/body" -w '%{http_code}' -X "$1" "$BASE$2" -H "Authorization: Bearer $3")
	[ -n "${4:-}" ] && args+=(-H 'Content-Type: application/json' -d "$4")
	[ -n "${5:-}" ] && args+=(-H "Idempotency-Key: $5")
	curl "${args[@]}"
}
field() { python3 -c "import json,sys; print(json.load(open('$WORK/body')).get('$1',''))"; }
expect() { # expect WHAT WANT GOT
	printf '%-60s %s %s\n' "$1" "$3" "$(head -c 140 "$WORK/body")"
	[ "$2" = "$3" ] || fail "$1: want $2, got $3"
}

ADMIN=$(tok acme mallory tickets:admin)
AGENT=$(tok acme agent "tickets:read tickets:write")
GLOBEX=$(tok globex eve tickets:admin)

echo "## tracker credentials"
for env in TICKETD_JWT_HS256_SECRET TICKETD_DATABASE_URL TICKETD_APPROVAL_SECRET TICKETD_CURSOR_SECRET; do
	got=$(req POST /api/v1/projects "$ADMIN" "{\"id\":\"steal\",\"key\":\"ST\",\"name\":\"x\",\"backend\":{\"kind\":\"github\",\"repository\":\"a/b\",\"api_url\":\"http://127.0.0.1:$TRAP_PORT/\",\"token_env\":\"$env\"}}")
	expect "token_env $env" 400 "$got"
done
got=$(req POST /api/v1/projects "$ADMIN" '{"id":"undecl","key":"UN","name":"x","backend":{"kind":"github","repository":"a/b","credential":"nope"}}')
expect "an undeclared credential" 400 "$got"
got=$(req POST /api/v1/projects "$GLOBEX" '{"id":"other","key":"OT","name":"x","backend":{"kind":"github","repository":"a/b","credential":"gh"}}')
expect "another tenant's credential" 400 "$got"

echo "## tracker endpoints (production mode: https, api.github.com and *.atlassian.net only)"
got=$(req POST /api/v1/projects "$ADMIN" "{\"id\":\"loop\",\"key\":\"LO\",\"name\":\"x\",\"backend\":{\"kind\":\"github\",\"repository\":\"a/b\",\"api_url\":\"http://127.0.0.1:$TRAP_PORT/\",\"credential\":\"gh\"}}")
expect "the trap listener as api_url" 400 "$got"
i=0
for host in 169.254.169.254 '[fd00:ec2::254]' '[64:ff9b::a9fe:a9fe]' '[::ffff:169.254.169.254]' localhost:5432 '[::1]' \
	0.0.0.0 10.0.0.1 2130706433 metadata.google.internal; do
	i=$((i + 1))
	got=$(req POST /api/v1/projects "$ADMIN" "{\"id\":\"p$i\",\"key\":\"P$i\",\"name\":\"x\",\"backend\":{\"kind\":\"github\",\"repository\":\"a/b\",\"api_url\":\"https://$host/\",\"credential\":\"gh\"}}")
	expect "api_url https://$host/" 400 "$got"
done

echo "## approval is a person's"
got=$(req POST /api/v1/projects "$ADMIN" '{"id":"support","key":"SUP","name":"Support"}')
expect "a local project" 201 "$got"
op=$(uuid)
urgent='{"project_id":"support","title":"Checkout is down","priority":"urgent"}'
got=$(req POST /api/v1/tickets "$AGENT" "$urgent" "$op")
expect "the agent's urgent create" 428 "$got"
approval=$(field approval_id)
got=$(req POST "/api/v1/approvals/$approval/approve" "$AGENT" '{}')
expect "the agent approves its own write" 403 "$got"
got=$(req POST "/api/v1/approvals/$approval/approve" "$ADMIN" '{}')
expect "an operator's token approves" 403 "$got"
got=$(req POST "/api/v1/approvals/$approval/approve" "$(tok globex eve tickets:approve)" '{}')
expect "another tenant approves" 404 "$got"
got=$(req POST /api/v1/tickets "$AGENT" "$urgent" "$op")
expect "the agent's retry before a person decided" 428 "$got"
got=$(req POST "/api/v1/approvals/$approval/approve" "$(tok acme carol tickets:approve)" '{}')
expect "a person with tickets:approve" 200 "$got"
got=$(req POST /api/v1/tickets "$AGENT" "$urgent" "$op")
expect "the agent's retry after approval writes" 201 "$got"
got=$(req POST /api/v1/tickets "$AGENT" "$urgent" "$op")
expect "and its retry is a replay" 200 "$got"

echo "## pruned operations stay answerable"
op=$(uuid)
got=$(req POST /api/v1/tickets "$AGENT" '{"project_id":"support","title":"To be pruned"}' "$op")
expect "a write that will be pruned" 201 "$got"
sleep 2.5 # --older-than 1s, with room for the second the write was made in
"$BIN" prune --older-than 1s >"$WORK/prune" 2>&1 || { cat "$WORK/prune"; fail "prune failed"; }
grep -q "^deleted [1-9]" "$WORK/prune" || { cat "$WORK/prune"; fail "prune deleted nothing"; }
got=$(req GET "/api/v1/operations/$op" "$AGENT")
expect "its lookup after prune" 200 "$got"
[ "$(field status)" = expired ] || fail "the pruned write's lookup says status $(field status), want expired"
got=$(req POST /api/v1/tickets "$AGENT" '{"project_id":"support","title":"To be pruned"}' "$op")
expect "its retry after prune" 409 "$got"
[ "$(field code)" = operation_expired ] || fail "the pruned write's retry says $(field code), want operation_expired"
got=$(req GET "/api/v1/operations/$op" "$(tok globex eve tickets:read)")
expect "another tenant's lookup of it" 404 "$got"

sleep 1 # the trap prints its count every half second
heard=$(tail -n 1 "$WORK/trap")
echo "## the trap listener accepted $heard connections"
[ "$heard" = 0 ] || fail "the listener a tracker URL named heard $heard connections"
[ "$failed" = 0 ] && echo "every attack was refused"
exit "$failed"
