\set r random(1, 999999999999)
SELECT status, ticket_id, result, fingerprint FROM operations WHERE tenant_id = 'demo' AND action = 'create_ticket' AND operation_id = ('00000000-0000-0000-0000-' || lpad(:r::text, 12, '0'))::uuid LIMIT 1;
BEGIN;
INSERT INTO operations (tenant_id, action, operation_id, fingerprint, status) VALUES ('demo', 'create_ticket', ('00000000-0000-0000-0000-' || lpad(:r::text, 12, '0'))::uuid, '\x0102', 'pending');
INSERT INTO tickets (tenant_id, project_id, title, description, priority, status) VALUES ('demo', 'support', 'bench ticket', 'created by mcpload', 'high', 'open') RETURNING id, number;
UPDATE operations SET status = 'done', result = '{"a":1}', updated_at = now() WHERE tenant_id = 'demo' AND action = 'create_ticket' AND operation_id = ('00000000-0000-0000-0000-' || lpad(:r::text, 12, '0'))::uuid;
COMMIT;
