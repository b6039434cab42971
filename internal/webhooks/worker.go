package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ticketd/ticketd/internal/db"
)

// deliveryArgs is the queued job: which delivery to attempt next.
type deliveryArgs struct {
	Tenant     string    `json:"tenant"`
	DeliveryID uuid.UUID `json:"delivery_id"`
	// SubscriptionID lets a worker apply the subscription's share before
	// touching the database; absent (uuid.Nil) in jobs queued before it was.
	SubscriptionID uuid.UUID `json:"subscription_id,omitzero"`
}

func (deliveryArgs) Kind() string { return "webhook_delivery" }

type deliveryWorker struct {
	river.WorkerDefaults[deliveryArgs]
	s *Service
}

// NextRetry spaces the attempts of one job with the service's backoff.
// River calls it before the failed attempt is counted in job.Errors.
func (w *deliveryWorker) NextRetry(job *river.Job[deliveryArgs]) time.Time {
	return time.Now().Add(w.s.backoff(len(job.Errors) + 1))
}

// Work makes one attempt. It returns an error only to have River retry.
func (w *deliveryWorker) Work(ctx context.Context, job *river.Job[deliveryArgs]) error {
	s := w.s
	release, wait, ok := s.shares.take(job.Args.Tenant, job.Args.SubscriptionID, s.opts.AttemptTimeout, rescued(job))
	if !ok {
		// The tenant or the subscription holds its share of this replica's
		// workers already (a slow receiver): give the worker to someone
		// else's delivery. A snooze spends no attempt.
		return river.JobSnooze(wait)
	}
	defer release()
	c, err := s.claim(ctx, job.Args)
	if err != nil {
		return err
	}
	switch {
	case c == nil:
		return nil
	case c.leasedFor > 0:
		// Another worker's attempt is in flight (a job rescued from a
		// replica that looked dead): wait for it rather than send twice at once.
		return river.JobSnooze(c.leasedFor)
	}
	res := s.send(ctx, c)
	final := job.Attempt >= job.MaxAttempts
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := s.record(recordCtx, c, res, final); err != nil {
		return err
	}
	if res.outcome != OutcomeDelivered && !res.gone && !final {
		return errors.New(res.errText)
	}
	return nil
}

// claimed is an attempt a worker has taken: its lease is held and its
// attempt row written as unknown before the request leaves.
type claimed struct {
	tenant     string
	deliveryID uuid.UUID
	subID      uuid.UUID
	webhookID  uuid.UUID
	attempt    int
	url        string
	secret     string
	payload    []byte
	leasedFor  time.Duration
}

func (s *Service) lockRow(tx *gorm.DB) *gorm.DB {
	if s.dialect == db.Postgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx // SQLite write transactions are IMMEDIATE: already exclusive
}

// claim takes the next attempt of a delivery, or returns nil when there is
// nothing to send (delivered, failed, deleted, or its webhook disabled).
func (s *Service) claim(ctx context.Context, args deliveryArgs) (*claimed, error) {
	if s.dialect == db.Postgres {
		if c, ok, err := s.claimAtOnce(ctx, args); err != nil || ok {
			return c, err
		}
	}
	var c *claimed
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row deliveryRow
		err := s.lockRow(tx).Where("tenant_id = ? AND id = ?", args.Tenant, args.DeliveryID).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil // its webhook was deleted
		}
		if err != nil {
			return fmt.Errorf("read delivery %s: %w", args.DeliveryID, err)
		}
		if row.Status != StatusPending {
			return nil // a duplicate run of a finished job
		}
		now := time.Now().UTC()
		if row.LeasedUntil != nil && row.LeasedUntil.After(now) {
			c = &claimed{leasedFor: row.LeasedUntil.Sub(now)}
			return nil
		}
		sub, err := getSubscription(tx, args.Tenant, row.SubscriptionID)
		if err != nil {
			return err
		}
		if sub.Status != SubscriptionActive {
			reason := "webhook disabled"
			if sub.DisabledReason != nil {
				reason += ": " + *sub.DisabledReason
			}
			return tx.Model(&deliveryRow{}).Where("tenant_id = ? AND id = ?", row.TenantID, row.ID).
				Updates(map[string]any{"status": StatusFailed, "last_error": reason, "updated_at": now}).Error
		}
		attempt := row.Attempts + 1
		err = tx.Model(&deliveryRow{}).Where("tenant_id = ? AND id = ?", row.TenantID, row.ID).Updates(map[string]any{
			"attempts": attempt, "leased_until": now.Add(s.opts.AttemptTimeout + leaseMargin), "updated_at": now,
		}).Error
		if err != nil {
			return fmt.Errorf("lease delivery %s: %w", row.ID, err)
		}
		// Written before sending: a replica that dies mid-request leaves
		// the truth behind, an attempt whose answer nobody saw.
		err = tx.Create(&attemptRow{TenantID: row.TenantID, DeliveryID: row.ID, Attempt: attempt, Outcome: OutcomeUnknown, StartedAt: now}).Error
		if err != nil {
			return fmt.Errorf("record attempt %d of delivery %s: %w", attempt, row.ID, err)
		}
		c = &claimed{
			tenant: row.TenantID, deliveryID: row.ID, subID: row.SubscriptionID, webhookID: row.WebhookID, attempt: attempt,
			url: sub.URL, secret: sub.Secret, payload: []byte(row.Payload),
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook delivery: %w", err)
	}
	return c, nil
}

type result struct {
	outcome string
	code    int
	latency time.Duration
	errText string
	gone    bool // 410: the receiver asks never to be called again
}

// leaseMargin is added to the attempt timeout for a claim's lease: the
// request can only be in flight that long, so after it another worker may
// send the next attempt (never the same one at once).
const leaseMargin = 2 * time.Second

// maxResponseRead bounds how much of a receiver's answer is read (only to
// let the connection be reused).
const maxResponseRead = 64 << 10

func (s *Service) send(ctx context.Context, c *claimed) result {
	ctx, cancel := context.WithTimeout(ctx, s.opts.AttemptTimeout)
	defer cancel()
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) { wrote.Store(info.Err == nil) },
	})
	start := time.Now()
	ts := start.Unix()
	sig, err := Sign(c.secret, c.webhookID.String(), ts, c.payload)
	if err != nil {
		return result{outcome: OutcomeFailed, errText: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.payload))
	if err != nil {
		return result{outcome: OutcomeFailed, errText: fmt.Sprintf("build request: %v", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ticketd-webhooks")
	req.Header.Set("webhook-id", c.webhookID.String())
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := s.http.Do(req)
	latency := time.Since(start)
	if err != nil {
		if wrote.Load() {
			return result{outcome: OutcomeUnknown, latency: latency, errText: "sent, no answer: " + err.Error()}
		}
		return result{outcome: OutcomeFailed, latency: latency, errText: "not sent: " + err.Error()}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseRead))
	_ = resp.Body.Close()
	r := result{code: resp.StatusCode, latency: latency}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.outcome = OutcomeDelivered
	case resp.StatusCode == http.StatusGone:
		r.outcome, r.gone, r.errText = OutcomeFailed, true, "receiver answered 410 Gone: webhook disabled"
	default:
		r.outcome, r.errText = OutcomeFailed, fmt.Sprintf("receiver answered %d", resp.StatusCode)
	}
	return r
}

// record stores an attempt's outcome and moves the delivery on: delivered,
// failed (410, or the last attempt), or still pending for a retry.
func (s *Service) record(ctx context.Context, c *claimed, r result, final bool) error {
	now := time.Now().UTC()
	status := StatusPending
	switch {
	case r.outcome == OutcomeDelivered:
		status = StatusDelivered
	case r.gone || final:
		status = StatusFailed
	}
	var code *int
	if r.code != 0 {
		code = &r.code
	}
	var errText *string
	if r.errText != "" {
		t := truncate(r.errText)
		errText = &t
	}
	if s.dialect == db.Postgres && !r.gone {
		return s.recordAtOnce(ctx, c, r, status, code, errText, now)
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Model(&attemptRow{}).Where("tenant_id = ? AND delivery_id = ? AND attempt = ?", c.tenant, c.deliveryID, c.attempt).
			Updates(map[string]any{"outcome": r.outcome, "status_code": code, "latency_ms": r.latency.Milliseconds(), "error": errText}).Error
		if err != nil {
			return fmt.Errorf("attempt: %w", err)
		}
		// Only the latest claim moves the delivery on: if this attempt's
		// lease ran out and another worker claimed the next attempt, that
		// attempt's outcome (and its lease) must stand.
		err = tx.Model(&deliveryRow{}).Where("tenant_id = ? AND id = ? AND attempts = ?", c.tenant, c.deliveryID, c.attempt).
			Updates(map[string]any{
				"status": status, "last_error": errText, "last_status_code": code, "leased_until": nil, "updated_at": now,
			}).Error
		if err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		if !r.gone {
			return nil
		}
		reason := "the receiver answered 410 Gone at " + now.Format(time.RFC3339)
		err = tx.Model(&subscriptionRow{}).Where("tenant_id = ? AND id = ?", c.tenant, c.subID).
			Updates(map[string]any{"status": SubscriptionDisabled, "disabled_reason": reason, "updated_at": now}).Error
		if err != nil {
			return fmt.Errorf("disable webhook: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record attempt %d of delivery %s: %w", c.attempt, c.deliveryID, err)
	}
	return nil
}
