\set r random(1, 999999999999)
SELECT status, ticket_id, result, fingerprint FROM operations WHERE tenant_id = 'demo' AND action = 'create_ticket' AND operation_id = ('00000000-0000-0000-0000-' || lpad(:r::text, 12, '0'))::uuid LIMIT 1;
