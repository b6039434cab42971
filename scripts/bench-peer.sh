#!/usr/bin/env bash
# DESIGN §24's yardstick run: ticketd against the go-sdk no-op floor and the
# naive peer (go-sdk + GORM + PostgreSQL done plainly), both from the shared
# bench folder (SHARED, default ../shared: run.sh and its load generator),
# interleaved, 16 workers, 3 rounds, fresh servers per round. It runs twice:
# with every database analysed before each suite (what autovacuum would have
# done), then with BENCH_ANALYZE=0 (never analysed, the plans of a fresh
# database or a bulk import), and prints the §24 goals against the medians.
#
#   scripts/bench-peer.sh                 # both runs, about 12 minutes
#   ANALYZE_RUNS=1 scripts/bench-peer.sh  # the analysed run only
#   BENCH_PG=postgres://postgres@127.0.0.1:5432 scripts/bench-peer.sh
#   scripts/bench-peer.sh --rounds 1 --duration 2   # a smoke run: flags go to run.sh
#
# Run it on an idle machine: a figure from a loaded one measures the load.
# The naive peer's replay suite prefills 2,000 operations, then replays them.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SHARED:-../shared}
[ -x "$shared/bench/run.sh" ] || { echo "bench-peer: no $shared/bench/run.sh (set SHARED)" >&2; exit 2; }
export BENCH_PG=${BENCH_PG:-postgres://postgres@127.0.0.1:5432}
out=${BENCH_OUT:-$(mktemp -d)}
go build -o "$out/ticketd" ./cmd/ticketd
runs=(analysed)
[ "${ANALYZE_RUNS:-2}" = 2 ] && runs+=(unanalysed)
for run in "${runs[@]}"; do
  analyze=1
  [ "$run" = unanalysed ] && analyze=0
  mkdir -p "$out/$run"
  BENCH_ANALYZE=$analyze BENCH_OUT="$out/$run" "$shared/bench/run.sh" "$out/ticketd" "$@" >&2
done
python3 scripts/bench-peer-goals.py "$out"
echo "bench-peer: raw runs and summaries in $out" >&2
