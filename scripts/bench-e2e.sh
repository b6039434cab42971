#!/usr/bin/env bash
# Issue 11's end-to-end benchmark in one run: builds ticketd, the go-sdk
# no-op server and the load generator, then `ticketd-load bench` runs every
# scenario once per round, interleaved, each against a fresh server process
# and (on PostgreSQL) a fresh database, and prints the medians as a markdown
# table with the goal ratios. Loopback only; every run is bounded.
#
#   scripts/bench-e2e.sh                               # 3 rounds, 2s warm-up + 8s, 16 workers
#   ROUNDS=1 WARMUP=500ms DURATION=2s WORKERS=4 SCENARIOS=noop,create,list scripts/bench-e2e.sh
#   SEEDS=10000,1000000 SCENARIOS=create@10k,list@10k,create@1M,list@1M scripts/bench-e2e.sh
#   scripts/bench-e2e.sh -json-out runs.json -work-dir /tmp/bench   # extra flags go to ticketd-load bench
#
# PG_ADMIN_URL (default: the server the tests use) must be allowed to create
# and drop databases; every database the run creates is dropped at the end.
#
# With Node.js (20 or later) on PATH the TypeScript SDK no-op
# (tools/ticketd-noop/ts) runs as a second floor; its pinned packages are
# installed with `npm ci` into the run's temporary directory, so npm's
# registry must be reachable. NODE=0 leaves that floor out; with Node but no
# registry the run fails rather than leave it out silently.
set -euo pipefail

cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/ticketd" ./cmd/ticketd
go build -o "$tmp/ticketd-noop" ./tools/ticketd-noop
go build -o "$tmp/ticketd-load" ./tools/ticketd-load

ts_floor=()
if [ "${NODE:-}" != 0 ] && command -v node >/dev/null; then
  cp -r tools/ticketd-noop/ts "$tmp/noop-ts"
  npm ci --prefix "$tmp/noop-ts" --no-audit --no-fund --loglevel=error >&2
  ts_floor=(-noop-ts "$tmp/noop-ts/server.mjs" -node "$(command -v node)")
else
  echo "bench-e2e: no TypeScript SDK floor (Node.js not found, or NODE=0)" >&2
fi

admin_url="${PG_ADMIN_URL:-$(./scripts/ensure-postgres.sh)}"

"$tmp/ticketd-load" bench -ticketd "$tmp/ticketd" -noop "$tmp/ticketd-noop" "${ts_floor[@]}" \
  -pg-admin-url "$admin_url" \
  -rounds "${ROUNDS:-3}" -warmup "${WARMUP:-2s}" -duration "${DURATION:-8s}" -workers "${WORKERS:-16}" \
  -seeds "${SEEDS:-}" -scenarios "${SCENARIOS:-}" "$@"
