-- A replay's statement for one of the demo tenant's 2,000 operations, read through the table ids (n, t, op), which
-- run.sh's second argument makes (docs/perf.md, "Planning, not executing").
\set i random(1, 2000)
SELECT o.fingerprint, o.status, o.result_id, o.error, o.approval_id, o.created_at, o.updated_at,
		r.id IS NOT NULL, r.id, r.tenant_id, r.project_id, r.number, r.key, r.title, r.description, r.priority, r.status, r.labels, r.reporter, r.operation_id, r.version, r.assignee, r.external_id, r.external_url, r.created_at, r.updated_at
	FROM operations o LEFT JOIN "tickets" r ON r.tenant_id = o.tenant_id AND r.id = CAST(o.result_id AS uuid) AND o.status = 'succeeded'
	WHERE o.tenant_id = (SELECT t FROM ids WHERE n = :i) AND o.action = 'create_ticket' AND o.operation_id = (SELECT op FROM ids WHERE n = :i)
	UNION ALL SELECT fingerprint, 'expired', NULL, NULL, NULL, pruned_at, pruned_at, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
	FROM operation_tombstones WHERE tenant_id = (SELECT t FROM ids WHERE n = :i) AND action = 'create_ticket' AND operation_id = (SELECT op FROM ids WHERE n = :i);
