#!/usr/bin/env bash
# What one statement costs PostgreSQL, apart from ticketd (docs/perf.md, "Where the CPU goes"):
#   scripts/pgbench/run.sh NAME "SQL to apply to the copy first, or empty" [SCRIPT]
# copies the database TEMPLATE (default bench_td, left by scripts/cpu-split.py td_create_pg; bench_naive for the naive
# peer's scripts) to pgb_NAME, applies the SQL (DROP INDEX ..., to price an index), runs SCRIPT (default create.sql,
# ticketd's one-statement create with literals) with pgbench, 16 clients, 3 s warm-up, T seconds (default 10),
# at RATE transactions/s when set, and prints the machine's CPU per transaction and PostgreSQL's own (every
# postgres process, exited backends through the postmaster's children times). Drops pgb_NAME at the end.
set -euo pipefail
name=$1; alter=$2; script=$(cd "$(dirname "$0")" && pwd)/${3:-create.sql}
db=pgb_$name
P="psql -X -q -h 127.0.0.1 -U postgres"
$P -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db TEMPLATE ${TEMPLATE:-bench_td}"
[ -n "$alter" ] && $P -d $db -c "$alter"
$P -d $db -c "ANALYZE"
pgc() { local pm; pm=$(pgrep -o -x postgres || pgrep -o postgres); { for p in $(pgrep postgres); do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done; awk '{print $16+$17}' /proc/$pm/stat; } | awk '{s+=$1} END{print s}'; }
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
pgbench -n -M prepared -c 16 -j 2 -T 3 -f $script -h 127.0.0.1 -U postgres $db >/dev/null 2>&1
a=$(busy); ga=$(pgc); out=$( { /usr/bin/time -f 'TIME %U %S' pgbench -n -M prepared -c 16 -j 2 ${RATE:+-R $RATE} -T ${T:-10} -f $script -h 127.0.0.1 -U postgres $db; } 2>&1); b=$(busy); gb=$(pgc)
tps=$(echo "$out" | awk '/^tps/{print $3}'); n=$(echo "$out" | awk '/processed:/{print $NF}' | cut -d/ -f1)
own=$(echo "$out" | awk '/^TIME/{print ($2+$3)*100}')
echo "$name tps=$tps n=$n machine_us_per_tx=$(( (b-a)*10000 / n )) minus_pgbench=$(( (b-a-${own%.*})*10000 / n )) pg=$(( (gb-ga)*10000 / n ))"
$P -d postgres -c "DROP DATABASE $db"
