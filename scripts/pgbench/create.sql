WITH ids AS MATERIALIZED (SELECT gen_random_uuid() AS op, gen_random_uuid() AS tid, gen_random_uuid() AS eid, now() AS at),
can AS MATERIALIZED (
		SELECT (EXISTS (SELECT 1 FROM webhook_subscriptions WHERE tenant_id = 'demo' AND status = 'active')) AS subscribed,
			EXISTS (SELECT 1 FROM projects WHERE tenant_id = 'demo' AND id = 'support') AS project
	), claim AS (
		INSERT INTO "operations" (tenant_id, action, operation_id, fingerprint, status, result_id, created_at, updated_at)
		SELECT 'demo', 'create_ticket', (SELECT op FROM ids), '8040babe4ab276d48efbfab814515f907251e21a45031e672041364e3354e2bf', 'succeeded', (SELECT tid FROM ids)::text,
			(SELECT at FROM ids), (SELECT at FROM ids)
		FROM (SELECT set_config('lock_timeout', '3000', true)) AS bounded
		WHERE NOT EXISTS (SELECT 1 FROM operation_tombstones
			WHERE tenant_id = 'demo' AND action = 'create_ticket' AND operation_id = (SELECT op FROM ids))
			AND (SELECT project AND NOT subscribed FROM can)
		ON CONFLICT DO NOTHING
		RETURNING set_config('lock_timeout', '0', true)
	), p AS MATERIALIZED (
		SELECT key, nextval(number_seq::regclass) AS number FROM projects
		WHERE tenant_id = 'demo' AND id = 'support' AND EXISTS (SELECT 1 FROM claim)
	), t AS (
		INSERT INTO "tickets" (id, tenant_id, project_id, number, key, title, description, priority, status, labels,
			reporter, operation_id, version, created_at, updated_at)
		SELECT (SELECT tid FROM ids), 'demo', 'support', p.number, p.key || '-' || p.number, 'bench ticket ' || p.number, 'created by mcpload',
			'high', 'open', '["bench","load"]', 'bench', (SELECT op FROM ids), 1, (SELECT at FROM ids), (SELECT at FROM ids)
		FROM p
		RETURNING id, number, key
	), e AS (
		INSERT INTO "ticket_events" (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, changes, created_at)
		SELECT (SELECT eid FROM ids), 'demo', t.id, 1, 1, 'created', 'bench', (SELECT op FROM ids), '{}', (SELECT at FROM ids)
		FROM t
	)
	SELECT EXISTS (SELECT 1 FROM claim), (SELECT number FROM t), (SELECT key FROM t), subscribed, project FROM can;
