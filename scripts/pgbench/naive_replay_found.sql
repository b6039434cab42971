-- A replay's statement for one of the demo tenant's 2,000 operations, read through the table ids (n, t, op), which
-- run.sh's second argument makes (docs/perf.md, "Planning, not executing").
\set i random(1, 2000)
SELECT status, ticket_id, result, fingerprint FROM operations WHERE tenant_id = (SELECT t FROM ids WHERE n = :i) AND action = 'create_ticket' AND operation_id = (SELECT op FROM ids WHERE n = :i) LIMIT 1;
