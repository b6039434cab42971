package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// On PostgreSQL the usual claim and record each take one statement, one
// round trip, instead of a transaction of five or four: a delivery's
// database time, not the receiver, bounded how many one replica sent a
// second (BenchmarkDeliveryThroughput), and each round trip holds a
// connection of the pool the API shares. A claim the statement cannot make
// (finished, leased by another worker, webhook disabled or deleted) falls
// back to the transaction, which says why; a 410, which also disables the
// webhook, is recorded by the transaction too.

// claimStatement leases a pending delivery whose lease is free and whose
// webhook is active, writes its attempt row as unknown, and returns what
// the attempt sends, all at once; no row when any condition fails. The
// UPDATE locks the delivery row, so two workers cannot both claim it: the
// second re-checks the lease after the first commits and finds it taken.
const claimStatement = `
WITH c AS (
	UPDATE webhook_deliveries d
	SET attempts = d.attempts + 1, leased_until = ?, updated_at = ?
	FROM webhook_subscriptions s
	WHERE d.tenant_id = ? AND d.id = ? AND d.status = ?
		AND (d.leased_until IS NULL OR d.leased_until <= ?)
		AND s.tenant_id = d.tenant_id AND s.id = d.subscription_id AND s.status = ?
	RETURNING d.tenant_id, d.id, d.subscription_id, d.webhook_id, d.attempts, d.payload, s.url, s.secret
), a AS (
	INSERT INTO webhook_attempts (tenant_id, delivery_id, attempt, outcome, latency_ms, started_at)
	SELECT tenant_id, id, attempts, ?, 0, ? FROM c
)
SELECT tenant_id, id, subscription_id, webhook_id, attempts, payload, url, secret FROM c`

type claimedRow struct {
	TenantID       string
	ID             uuid.UUID
	SubscriptionID uuid.UUID
	WebhookID      uuid.UUID
	Attempts       int
	Payload        string
	URL            string
	Secret         string
}

// claimAtOnce is claim's one-statement path; ok is false when it claimed
// nothing and the transaction must look.
func (s *Service) claimAtOnce(ctx context.Context, args deliveryArgs) (c *claimed, ok bool, err error) {
	now := time.Now().UTC()
	var rows []claimedRow
	err = s.db.WithContext(ctx).Raw(claimStatement,
		now.Add(s.opts.AttemptTimeout+leaseMargin), now, args.Tenant, args.DeliveryID, StatusPending, now, SubscriptionActive,
		OutcomeUnknown, now).Scan(&rows).Error
	if err != nil {
		return nil, false, fmt.Errorf("claim webhook delivery %s: %w", args.DeliveryID, err)
	}
	if len(rows) != 1 {
		return nil, false, nil
	}
	r := rows[0]
	return &claimed{
		tenant: r.TenantID, deliveryID: r.ID, subID: r.SubscriptionID, webhookID: r.WebhookID, attempt: r.Attempts,
		url: r.URL, secret: r.Secret, payload: []byte(r.Payload),
	}, true, nil
}

// recordStatement stores an attempt's outcome and moves its delivery on
// in one statement; the delivery only if this is still its latest claim,
// as record says.
const recordStatement = `
WITH a AS (
	UPDATE webhook_attempts SET outcome = ?, status_code = ?, latency_ms = ?, error = ?
	WHERE tenant_id = ? AND delivery_id = ? AND attempt = ?
)
UPDATE webhook_deliveries
SET status = ?, last_error = ?, last_status_code = ?, leased_until = NULL, updated_at = ?
WHERE tenant_id = ? AND id = ? AND attempts = ?`

// recordAtOnce is record's one-statement path, for every outcome but 410.
func (s *Service) recordAtOnce(ctx context.Context, c *claimed, r result, status string, code *int, errText *string, now time.Time) error {
	err := s.db.WithContext(ctx).Exec(recordStatement,
		r.outcome, code, r.latency.Milliseconds(), errText, c.tenant, c.deliveryID, c.attempt,
		status, errText, code, now, c.tenant, c.deliveryID, c.attempt).Error
	if err != nil {
		return fmt.Errorf("record attempt %d of delivery %s: %w", c.attempt, c.deliveryID, err)
	}
	return nil
}
