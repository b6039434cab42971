package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// Bounds on what an admin can make ticketd hold.
const (
	maxURLLen         = 2000
	maxDescriptionLen = 200
	maxDeliveriesPage = 100
	maxErrorLen       = 500
)

type subscriptionRow struct {
	TenantID       string
	ID             uuid.UUID
	URL            string
	Events         string
	Description    string
	Secret         string
	Status         string
	DisabledReason *string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func (subscriptionRow) TableName() string { return "webhook_subscriptions" }

func (r subscriptionRow) domain() (Subscription, error) {
	var events []string
	if err := json.Unmarshal([]byte(r.Events), &events); err != nil {
		return Subscription{}, fmt.Errorf("decode events of webhook %s: %w", r.ID, err)
	}
	s := Subscription{
		ID: r.ID, URL: r.URL, Events: events, Description: r.Description, Status: r.Status,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.DisabledReason != nil {
		s.DisabledReason = *r.DisabledReason
	}
	return s, nil
}

type deliveryRow struct {
	TenantID       string
	ID             uuid.UUID
	SubscriptionID uuid.UUID
	WebhookID      uuid.UUID
	EventType      string
	OperationID    uuid.NullUUID
	TicketID       uuid.NullUUID
	Payload        string
	Status         string
	Attempts       int
	LastError      *string
	LastStatusCode *int
	LeasedUntil    *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func (deliveryRow) TableName() string { return "webhook_deliveries" }

func (r deliveryRow) domain() Delivery {
	d := Delivery{
		ID: r.ID, SubscriptionID: r.SubscriptionID, WebhookID: r.WebhookID, EventType: r.EventType,
		OperationID: r.OperationID.UUID, TicketID: r.TicketID.UUID, Status: r.Status,
		AttemptCount: r.Attempts, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.LastError != nil {
		d.LastError = *r.LastError
	}
	if r.LastStatusCode != nil {
		d.LastStatusCode = *r.LastStatusCode
	}
	return d
}

type attemptRow struct {
	TenantID   string
	DeliveryID uuid.UUID
	Attempt    int
	Outcome    string
	StatusCode *int
	LatencyMs  int64
	Error      *string
	StartedAt  time.Time
}

func (attemptRow) TableName() string { return "webhook_attempts" }

func (r attemptRow) domain() Attempt {
	a := Attempt{Number: r.Attempt, Outcome: r.Outcome, Latency: time.Duration(r.LatencyMs) * time.Millisecond, StartedAt: r.StartedAt}
	if r.StatusCode != nil {
		a.StatusCode = *r.StatusCode
	}
	if r.Error != nil {
		a.Error = *r.Error
	}
	return a
}

// CreateSubscription registers a receiver for tenant and returns it with
// its signing secret, which is shown this once. The URL is checked against
// the SSRF policy, its host resolved. Errors: ErrInvalid.
func (s *Service) CreateSubscription(ctx context.Context, tenant string, in NewSubscription) (Subscription, string, error) {
	if tenant == "" {
		return Subscription{}, "", fmt.Errorf("%w: tenant is required", ErrInvalid)
	}
	events, err := normaliseEvents(in.Events)
	if err != nil {
		return Subscription{}, "", err
	}
	description := strings.TrimSpace(in.Description)
	if utf8.RuneCountInString(description) > maxDescriptionLen {
		return Subscription{}, "", fmt.Errorf("%w: description is longer than %d characters", ErrInvalid, maxDescriptionLen)
	}
	rawURL := strings.TrimSpace(in.URL)
	if rawURL == "" || len(rawURL) > maxURLLen {
		return Subscription{}, "", fmt.Errorf("%w: url is required, at most %d bytes", ErrInvalid, maxURLLen)
	}
	u, err := s.guard.CheckURL(ctx, rawURL)
	if err != nil {
		return Subscription{}, "", fmt.Errorf("%w: url: %w", ErrInvalid, err)
	}
	eventsJSON, err := json.Marshal(events)
	if err != nil {
		return Subscription{}, "", fmt.Errorf("encode events: %w", err)
	}
	now := time.Now().UTC()
	row := subscriptionRow{
		TenantID: tenant, ID: uuid.Must(uuid.NewV7()), URL: u.String(), Events: string(eventsJSON),
		Description: description, Secret: newSecret(), Status: SubscriptionActive, CreatedAt: now, UpdatedAt: now,
	}
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&subscriptionRow{}).Where("tenant_id = ?", tenant).Count(&n).Error; err != nil {
			return fmt.Errorf("count webhooks: %w", err)
		}
		if n >= int64(s.opts.MaxSubscriptions) {
			return fmt.Errorf("%w: a tenant has at most %d webhooks; delete one first", ErrInvalid, s.opts.MaxSubscriptions)
		}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("insert webhook: %w", err)
		}
		return nil
	})
	if err != nil {
		return Subscription{}, "", err
	}
	sub, err := row.domain()
	return sub, row.Secret, err
}

func normaliseEvents(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("%w: events must name at least one of %v", ErrInvalid, EventTypes)
	}
	var out []string
	for _, e := range in {
		if !slices.Contains(EventTypes, e) {
			return nil, fmt.Errorf("%w: unknown event type %q (want one of %v)", ErrInvalid, e, EventTypes)
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// ListSubscriptions returns tenant's webhooks, oldest first (at most
// Options.MaxSubscriptions exist).
func (s *Service) ListSubscriptions(ctx context.Context, tenant string) ([]Subscription, error) {
	var rows []subscriptionRow
	err := s.db.WithContext(ctx).Where("tenant_id = ?", tenant).Order("id").Limit(s.opts.MaxSubscriptions).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	out := make([]Subscription, 0, len(rows))
	for _, r := range rows {
		sub, err := r.domain()
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	return out, nil
}

// GetSubscription returns one of tenant's webhooks. Errors: ErrNotFound.
func (s *Service) GetSubscription(ctx context.Context, tenant string, id uuid.UUID) (Subscription, error) {
	row, err := getSubscription(s.db.WithContext(ctx), tenant, id)
	if err != nil {
		return Subscription{}, err
	}
	return row.domain()
}

func getSubscription(tx *gorm.DB, tenant string, id uuid.UUID) (subscriptionRow, error) {
	var row subscriptionRow
	err := tx.Where("tenant_id = ? AND id = ?", tenant, id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, fmt.Errorf("%w: no webhook %s", ErrNotFound, id)
	}
	if err != nil {
		return row, fmt.Errorf("read webhook %s: %w", id, err)
	}
	return row, nil
}

// DeleteSubscription removes one of tenant's webhooks with its deliveries
// and their attempts; jobs still queued for them find nothing and end.
// Errors: ErrNotFound.
func (s *Service) DeleteSubscription(ctx context.Context, tenant string, id uuid.UUID) error {
	res := s.db.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenant, id).Delete(&subscriptionRow{})
	if res.Error != nil {
		return fmt.Errorf("delete webhook %s: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: no webhook %s", ErrNotFound, id)
	}
	return nil
}

// Deliveries returns a webhook's most recent deliveries, newest first, each
// with its attempts; limit is clamped to 1–100 (0 means 50).
// Errors: ErrNotFound for an unknown webhook.
func (s *Service) Deliveries(ctx context.Context, tenant string, subscriptionID uuid.UUID, limit int) ([]Delivery, error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, maxDeliveriesPage)
	tx := s.db.WithContext(ctx)
	if _, err := getSubscription(tx, tenant, subscriptionID); err != nil {
		return nil, err
	}
	var rows []deliveryRow
	err := tx.Where("tenant_id = ? AND subscription_id = ?", tenant, subscriptionID).Order("id DESC").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return s.withAttempts(tx, tenant, rows)
}

func (s *Service) withAttempts(tx *gorm.DB, tenant string, rows []deliveryRow) ([]Delivery, error) {
	if len(rows) == 0 {
		return []Delivery{}, nil
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var attempts []attemptRow
	err := tx.Where("tenant_id = ? AND delivery_id IN ?", tenant, ids).Order("delivery_id, attempt").Find(&attempts).Error
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	byDelivery := make(map[uuid.UUID][]Attempt, len(rows))
	for _, a := range attempts {
		byDelivery[a.DeliveryID] = append(byDelivery[a.DeliveryID], a.domain())
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
		out[i].Attempts = byDelivery[r.ID]
	}
	return out, nil
}

// Delivery returns one delivery of a webhook with its attempts.
// Errors: ErrNotFound.
func (s *Service) Delivery(ctx context.Context, tenant string, subscriptionID, deliveryID uuid.UUID) (Delivery, error) {
	tx := s.db.WithContext(ctx)
	row, err := getDelivery(tx, tenant, subscriptionID, deliveryID)
	if err != nil {
		return Delivery{}, err
	}
	out, err := s.withAttempts(tx, tenant, []deliveryRow{row})
	if err != nil {
		return Delivery{}, err
	}
	return out[0], nil
}

func getDelivery(tx *gorm.DB, tenant string, subscriptionID, deliveryID uuid.UUID) (deliveryRow, error) {
	var row deliveryRow
	err := tx.Where("tenant_id = ? AND subscription_id = ? AND id = ?", tenant, subscriptionID, deliveryID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, fmt.Errorf("%w: no delivery %s for webhook %s", ErrNotFound, deliveryID, subscriptionID)
	}
	if err != nil {
		return row, fmt.Errorf("read delivery %s: %w", deliveryID, err)
	}
	return row, nil
}

// DeliveriesFor returns what the outside world has been told about one
// operation's events: one entry per delivery, oldest first. An operation
// that matched no webhook has none.
func (s *Service) DeliveriesFor(ctx context.Context, tenant string, operationID uuid.UUID) ([]DeliveryStatus, error) {
	var rows []deliveryRow
	err := s.db.WithContext(ctx).Where("tenant_id = ? AND operation_id = ?", tenant, operationID).
		Order("id").Limit(maxDeliveriesPage).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list deliveries of operation %s: %w", operationID, err)
	}
	out := make([]DeliveryStatus, len(rows))
	for i, r := range rows {
		d := r.domain()
		out[i] = DeliveryStatus{
			WebhookID: d.WebhookID, SubscriptionID: d.SubscriptionID, EventType: d.EventType,
			Status: d.Status, Attempts: d.AttemptCount, LastError: d.LastError,
		}
	}
	return out, nil
}

func truncate(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	cut := maxErrorLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
