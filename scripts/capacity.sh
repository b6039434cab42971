#!/usr/bin/env bash
# Measures the capacity model of docs/scale.md: write calls per second, CPU
# per write of ticketd and of PostgreSQL, and the connections one ticketd
# holds. It starts a throwaway PostgreSQL of its own (initdb in a temporary
# directory, a free port, run as the postgres OS user when run as root), so
# that the server's CPU is ticketd's load alone and not the test suite's,
# runs ticketd serve --dev on it and drives ticketd-load (MCP writes: creates,
# updates and comments) at it, then stops and removes everything. Arguments
# go to ticketd-load (default: -workers 16 -duration 10s -update-ratio 0.3
# -comment-ratio 0.3 -retry-ratio 0).
#
#   scripts/capacity.sh
#   scripts/capacity.sh -workers 32 -duration 20s
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "capacity.sh: $*" >&2; }

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bindir" ] || { log "needs PostgreSQL's server binaries (/usr/lib/postgresql/VERSION/bin)"; exit 1; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && { kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
  [ -f "$tmp/pg/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$tmp/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir "$tmp/pg" "$tmp/sock"
[ "$(id -u)" = 0 ] && chown postgres "$tmp/pg" "$tmp/sock"
as_pg "$bindir/initdb" -D "$tmp/pg" -U postgres --auth trust >/dev/null
as_pg "$bindir/pg_ctl" -D "$tmp/pg" -l "$tmp/pg/server.log" -w \
  -o "-p $port -k $tmp/sock -c listen_addresses=127.0.0.1" start >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
postmaster=$(head -n 1 "$tmp/pg/postmaster.pid")
log "PostgreSQL $(basename "$(dirname "$bindir")") on port $port (postmaster $postmaster)"

go build -o "$tmp/ticketd" ./cmd/ticketd
go build -o "$tmp/ticketd-load" ./tools/ticketd-load
TICKETD_DATABASE_URL="$url" "$tmp/ticketd" serve --dev --data-dir "$tmp/data" --addr 127.0.0.1:0 \
  --rate-limit-writes 0 --rate-limit-reads 0 --tenant-concurrency 0 --log-level warn >"$tmp/server.out" 2>"$tmp/server.log" &
server_pid=$!
for _ in $(seq 1 300); do grep -q "http://127.0.0.1:" "$tmp/server.out" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's#.*\(http://127\.0\.0\.1:[0-9]*\).*#\1#p' "$tmp/server.out" | head -n 1)
[ -n "$base" ] || { log "ticketd did not start:"; cat "$tmp/server.log" >&2; exit 1; }
TICKETD_TOKEN=$("$tmp/ticketd" token --dev --data-dir "$tmp/data" --addr 127.0.0.1:0 \
  --tenant demo --subject load --scope "tickets:read tickets:write" 2>/dev/null)
export TICKETD_TOKEN

# pg_cpu: CPU seconds of the postmaster and all its children so far.
clk=$(getconf CLK_TCK)
pg_cpu() {
  local total=0 pid stat
  for pid in $postmaster $(ps -o pid= --ppid "$postmaster"); do
    stat=$(cut -d')' -f2 "/proc/$pid/stat" 2>/dev/null) || continue
    total=$((total + $(echo "$stat" | awk '{print $12 + $13}')))
  done
  echo "scale=3; $total / $clk" | bc
}
peak_conns() {
  local peak=0 n
  while :; do
    n=$(psql -Atqd "$url" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" 2>/dev/null || echo 0)
    [ "$n" -gt "$peak" ] && { peak=$n; echo "$peak" >"$tmp/peak"; }
    sleep 0.5
  done
}
peak_conns & sampler=$!

args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-workers 16 -duration 10s -update-ratio 0.3 -comment-ratio 0.3 -retry-ratio 0)
before=$(pg_cpu)
"$tmp/ticketd-load" -url "$base/mcp" -project support -server-pid "$server_pid" -json "${args[@]}" >"$tmp/load.json"
after=$(pg_cpu)
kill "$sampler" 2>/dev/null || true
cat "$tmp/load.json"
calls=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("calls") or d.get("ok") or 0)' "$tmp/load.json")
echo "postgres_cpu_seconds=$(echo "$after - $before" | bc) calls=$calls postgres_cpu_ms_per_call=$(echo "scale=3; ($after - $before) * 1000 / $calls" | bc) peak_client_connections=$(cat "$tmp/peak" 2>/dev/null || echo 0) load_average=\"$(cut -d' ' -f1-3 /proc/loadavg)\" cores=$(nproc)"
