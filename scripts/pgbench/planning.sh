#!/usr/bin/env bash
# What planning costs PostgreSQL, apart from executing (docs/perf.md, "Planning, not executing"):
#   scripts/pgbench/planning.sh [DB]
# EXPLAIN (SUMMARY), five times each on one connection, prints each planning time, what a custom plan costs
# (plan_cache_mode=force_custom_plan, internal/db/session.go) on every execution of:
#   create   ticketd's create statement (create.sql, which EXPLAIN plans but does not run); sent ByKey, so planned
#            once per connection
#   joined   the lookup every create and replay sent first until it was split: the record with its ticket joined
#   missing  the lookup every write sends first now: the record or tombstone alone (sent ByKey), here of a new key
#   ticket   what a create's replay reads after it: its ticket by ID, planned on each execution
# DB defaults to bench_td, the database scripts/cpu-split.py td_create_pg leaves.
set -euo pipefail
db=${1:-bench_td}
here=$(cd "$(dirname "$0")" && pwd)
P="psql -X -q -At -h 127.0.0.1 -U postgres -d $db"
op=$($P -c "SELECT operation_id FROM operations WHERE status = 'succeeded' LIMIT 1")
tenant=$($P -c "SELECT tenant_id FROM operations WHERE operation_id = '$op'")
joined="SELECT o.fingerprint, o.status, o.result_id, o.error, o.approval_id, o.created_at, o.updated_at,
	r.id IS NOT NULL, r.id, r.tenant_id, r.project_id, r.number, r.key, r.title, r.description, r.priority, r.status,
	r.labels, r.reporter, r.operation_id, r.version, r.assignee, r.external_id, r.external_url, r.created_at, r.updated_at
FROM operations o LEFT JOIN tickets r ON r.tenant_id = o.tenant_id AND r.id = CAST(o.result_id AS uuid) AND o.status = 'succeeded'
WHERE o.tenant_id = '$tenant' AND o.action = 'create_ticket' AND o.operation_id = '$op'
UNION ALL SELECT fingerprint, 'expired', NULL, NULL, NULL, pruned_at, pruned_at, false, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM operation_tombstones WHERE tenant_id = '$tenant' AND action = 'create_ticket' AND operation_id = '$op'"
missing="SELECT fingerprint, status, result_id, error, approval_id, created_at, updated_at FROM operations
WHERE tenant_id = '$tenant' AND action = 'create_ticket' AND operation_id = gen_random_uuid()
UNION ALL SELECT fingerprint, 'expired', NULL, NULL, NULL, pruned_at, pruned_at FROM operation_tombstones
WHERE tenant_id = '$tenant' AND action = 'create_ticket' AND operation_id = gen_random_uuid()"
ticket="SELECT id, tenant_id, project_id, number, key, title, description, priority, status, labels, reporter,
	operation_id, version, assignee, external_id, external_url, created_at, updated_at FROM tickets
WHERE tenant_id = '$tenant' AND id = (SELECT CAST(result_id AS uuid) FROM operations WHERE operation_id = '$op')"
for what in create joined missing ticket; do
  case $what in
    create) sql=$(cat "$here/create.sql") ;;
    joined) sql=$joined ;;
    missing) sql=$missing ;;
    ticket) sql=$ticket ;;
  esac
  times=$(for _ in 1 2 3 4 5; do echo "EXPLAIN (SUMMARY) ${sql%;};"; done | $P | sed -n 's/^Planning Time: //p' | tr '\n' ' ')
  echo "$what planning: $times"
done
