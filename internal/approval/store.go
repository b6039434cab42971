package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

type approvalRow struct {
	ApprovalID  string     `gorm:"column:approval_id;primaryKey"`
	TenantID    string     `gorm:"column:tenant_id"`
	Action      string     `gorm:"column:action"`
	OperationID string     `gorm:"column:operation_id"`
	Fingerprint string     `gorm:"column:fingerprint"`
	RequestedBy string     `gorm:"column:requested_by"`
	Proposal    string     `gorm:"column:proposal"`
	Status      string     `gorm:"column:status"`
	DecidedBy   *string    `gorm:"column:decided_by"`
	DecidedVia  *string    `gorm:"column:decided_via"`
	CreatedAt   time.Time  `gorm:"column:created_at"`
	DecidedAt   *time.Time `gorm:"column:decided_at"`
	ExpiresAt   time.Time  `gorm:"column:expires_at"`
	ReportedAt  *time.Time `gorm:"column:reported_at"`
}

func (approvalRow) TableName() string { return "approvals" }

func (r approvalRow) toApproval() (Approval, error) {
	op, err := uuid.Parse(r.OperationID)
	if err != nil {
		return Approval{}, fmt.Errorf("approval %s: bad operation_id %q: %w", r.ApprovalID, r.OperationID, err)
	}
	a := Approval{
		ID: r.ApprovalID, Tenant: r.TenantID, Action: r.Action, OperationID: op, Fingerprint: r.Fingerprint,
		RequestedBy: r.RequestedBy, Status: Status(r.Status), CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
	}
	if err := json.Unmarshal([]byte(r.Proposal), &a.Proposal); err != nil {
		return Approval{}, fmt.Errorf("approval %s: bad proposal: %w", r.ApprovalID, err)
	}
	if r.DecidedBy != nil {
		a.DecidedBy = *r.DecidedBy
	}
	if r.DecidedVia != nil {
		a.DecidedVia = Via(*r.DecidedVia)
	}
	if r.DecidedAt != nil {
		at := r.DecidedAt.UTC()
		a.DecidedAt = &at
	}
	return a, nil
}

func (g *Gate) byID(ctx context.Context, tenant, id string) (Approval, error) {
	var row approvalRow
	err := g.db.WithContext(ctx).Where("approval_id = ? AND tenant_id = ?", id, tenant).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return Approval{}, fmt.Errorf("approval %s: %w", id, ErrNotFound)
	case err != nil:
		return Approval{}, fmt.Errorf("%w: read approval: %v", ErrUnavailable, err)
	}
	return row.toApproval()
}

// Get returns the tenant's approval id as a person deciding it is shown it,
// marked expired once its time has run out. Who may see it is the
// transport's check (tickets:approve in the tenant); another tenant's
// approval is ErrNotFound, as if it did not exist.
//
// Errors: ErrNotFound, ErrUnavailable.
func (g *Gate) Get(ctx context.Context, tenant, id string) (Approval, error) {
	a, err := g.byID(ctx, tenant, id)
	if err != nil {
		return Approval{}, err
	}
	if (a.Status == StatusPending || a.Status == StatusApproved) && !g.now().Before(a.ExpiresAt) {
		if err := g.expire(ctx, a.Tenant, a.ID); err != nil {
			return Approval{}, err
		}
		a.Status = StatusExpired
	}
	return a, nil
}

// Decide records subject's decision on the tenant's pending approval id,
// made on the console page (ViaConsole) or over REST (ViaREST). The
// transport has checked that subject holds tickets:approve; with FourEyes
// the requester's own subject is refused.
//
// Errors: ErrNotFound, ErrSelfApproval, ErrDecided (decided already or
// expired), ErrUnavailable.
func (g *Gate) Decide(ctx context.Context, tenant, subject, id string, approve bool, via Via) (Approval, error) {
	a, err := g.Get(ctx, tenant, id)
	if err != nil {
		return Approval{}, err
	}
	if g.SelfApproval(a, subject) {
		return a, fmt.Errorf("%w: %s asked for approval %s, so another person must decide it", ErrSelfApproval, subject, id)
	}
	if a.Status != StatusPending {
		return a, fmt.Errorf("%w: approval %s is %s", ErrDecided, id, a.Status)
	}
	now := g.now()
	updates := map[string]any{"decided_by": subject, "decided_via": string(via), "decided_at": now}
	if approve {
		updates["status"], updates["expires_at"] = string(StatusApproved), now.Add(g.opts.TTL)
	} else {
		updates["status"] = string(StatusDeclined)
	}
	res := g.db.WithContext(ctx).Model(&approvalRow{}).
		Where("approval_id = ? AND tenant_id = ? AND status = ? AND expires_at > ?", id, tenant, string(StatusPending), now).Updates(updates)
	switch {
	case res.Error != nil:
		return Approval{}, fmt.Errorf("%w: decide approval: %v", ErrUnavailable, res.Error)
	case res.RowsAffected == 0:
		return a, fmt.Errorf("%w: approval %s was decided meanwhile, or expired", ErrDecided, id)
	}
	if approve {
		g.event(EventApproved)
	} else {
		g.event(EventDeclined)
	}
	return g.byID(ctx, tenant, id)
}

// ListPending returns the tenant's pending, unexpired approvals, whoever
// asked for them, newest first, at most limit: what its approvers may
// decide.
//
// Errors: ErrUnavailable.
func (g *Gate) ListPending(ctx context.Context, tenant string, limit int) ([]Approval, error) {
	var rows []approvalRow
	err := g.db.WithContext(ctx).
		Where("tenant_id = ? AND status = ? AND expires_at > ?", tenant, string(StatusPending), g.now()).
		Order("created_at DESC").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("%w: list approvals: %v", ErrUnavailable, err)
	}
	out := make([]Approval, 0, len(rows))
	for _, r := range rows {
		a, err := r.toApproval()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// SelfApproval reports whether subject may not decide a because it asked
// for it and four-eyes is on (TICKETD_APPROVAL_FOUR_EYES): the one rule
// Decide enforces and the console's page shows.
func (g *Gate) SelfApproval(a Approval, subject string) bool {
	return g.opts.FourEyes && a.RequestedBy == subject
}

// Lookup returns the tenant's approval id whoever asked for it, for
// reports on the write it let through (get_operation_status, history).
//
// Errors: ErrNotFound, ErrUnavailable.
func (g *Gate) Lookup(ctx context.Context, tenant, id string) (Approval, error) {
	return g.byID(ctx, tenant, id)
}

// ForOperations returns, by operation ID, the approvals the tenant's writes
// among ids used, for a history that says who approved each change.
//
// Errors: ErrUnavailable.
func (g *Gate) ForOperations(ctx context.Context, tenant string, ids []uuid.UUID) (map[uuid.UUID]Approval, error) {
	out := map[uuid.UUID]Approval{}
	if len(ids) == 0 {
		return out, nil
	}
	texts := make([]string, len(ids))
	for i, id := range ids {
		texts[i] = id.String()
	}
	var rows []approvalRow
	if err := g.db.WithContext(ctx).Where("tenant_id = ? AND operation_id IN ? AND status = ?", tenant, texts, string(StatusUsed)).
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("%w: read approvals of operations: %v", ErrUnavailable, err)
	}
	for _, r := range rows {
		a, err := r.toApproval()
		if err != nil {
			return nil, err
		}
		out[a.OperationID] = a
	}
	return out, nil
}
