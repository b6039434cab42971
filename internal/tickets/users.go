package tickets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ticketd/ticketd/internal/operations"
)

// Limits of the tenant directory.
const (
	MaxUserID      = MaxAssignee
	MaxDisplayName = 200
	MaxEmail       = 254
	// MaxUsersListed bounds one ListUsers answer; a query narrows it.
	MaxUsersListed = 100
)

// User is one of the tenant's people: ID is a token's subject, what an
// assignee names.
type User struct {
	ID          string
	DisplayName string
	Email       string
	Active      bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// UserPatch changes a user: nil fields stay.
type UserPatch struct {
	DisplayName *string
	Email       *string
	Active      *bool
}

type userRow struct {
	TenantID    string    `gorm:"column:tenant_id;primaryKey"`
	ID          string    `gorm:"column:id;primaryKey"`
	DisplayName string    `gorm:"column:display_name"`
	Email       string    `gorm:"column:email"`
	Active      bool      `gorm:"column:active"`
	CreatedAt   time.Time `gorm:"column:created_at"`
	UpdatedAt   time.Time `gorm:"column:updated_at"`
}

func (userRow) TableName() string { return "users" }

func (r userRow) toUser() User {
	return User{ID: r.ID, DisplayName: r.DisplayName, Email: r.Email, Active: r.Active,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// userText checks and trims one of a user's text fields.
func userText(field, s string, maxLen int, required bool) (string, error) {
	if msg := checkText(s); msg != "" {
		return "", invalidField(field, "%s", msg)
	}
	s = canonicalText(s, false)
	switch n := utf8.RuneCountInString(s); {
	case required && n == 0:
		return "", invalidField(field, "is required and must not be blank")
	case n > maxLen:
		return "", invalidField(field, "must be at most %d characters after trimming, got %d", maxLen, n)
	}
	return s, nil
}

// CreateUser adds an active user to the tenant's directory (u.Active is
// ignored: UpdateUser deactivates).
//
// Errors: ErrInvalid, ErrExists, ErrUnavailable.
func (s *Service) CreateUser(ctx context.Context, tenant string, u User) (User, error) {
	id, err := userText("id", u.ID, MaxUserID, true)
	if err != nil {
		return User{}, err
	}
	if id == AssigneeMe {
		return User{}, invalidField("id", "%q names the caller in an assignee and cannot be a user's ID", AssigneeMe)
	}
	name, err := userText("display_name", u.DisplayName, MaxDisplayName, false)
	if err != nil {
		return User{}, err
	}
	email, err := userText("email", u.Email, MaxEmail, false)
	if err != nil {
		return User{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	row := userRow{TenantID: tenant, ID: id, DisplayName: name, Email: email, Active: true, CreatedAt: now, UpdatedAt: now}
	err = s.db.WithContext(ctx).Create(&row).Error
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return User{}, fmt.Errorf("user %q: %w", id, ErrExists)
	case err != nil:
		return User{}, fmt.Errorf("%w: create user: %v", ErrUnavailable, err)
	}
	s.enrolled.Store(tenant+"\x00"+id, true)
	return row.toUser(), nil
}

// UpdateUser changes the tenant's user id.
//
// Errors: ErrInvalid, ErrNotFound, ErrUnavailable.
func (s *Service) UpdateUser(ctx context.Context, tenant, id string, p UserPatch) (User, error) {
	set := map[string]any{"updated_at": time.Now().UTC().Truncate(time.Microsecond)}
	if p.DisplayName != nil {
		v, err := userText("display_name", *p.DisplayName, MaxDisplayName, false)
		if err != nil {
			return User{}, err
		}
		set["display_name"] = v
	}
	if p.Email != nil {
		v, err := userText("email", *p.Email, MaxEmail, false)
		if err != nil {
			return User{}, err
		}
		set["email"] = v
	}
	if p.Active != nil {
		set["active"] = *p.Active
	}
	var row userRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&userRow{}).Where("tenant_id = ? AND id = ?", tenant, id).Updates(set)
		switch {
		case res.Error != nil:
			return fmt.Errorf("%w: update user: %v", ErrUnavailable, res.Error)
		case res.RowsAffected == 0:
			return fmt.Errorf("user %q: %w", id, ErrNotFound)
		}
		return tx.Where("tenant_id = ? AND id = ?", tenant, id).Take(&row).Error
	})
	if err != nil {
		return User{}, err
	}
	return row.toUser(), nil
}

// ListUsers returns the tenant's users whose ID, display name or e-mail
// contains query (any case; empty: all), active first, then by ID; at most
// MaxUsersListed.
//
// Errors: ErrInvalid, ErrUnavailable.
func (s *Service) ListUsers(ctx context.Context, tenant, query string) ([]User, error) {
	q, err := userText("query", query, MaxQuery, false)
	if err != nil {
		return nil, err
	}
	db := s.reads.WithContext(ctx).Where("tenant_id = ?", tenant)
	if q != "" {
		like := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(strings.ToLower(q)) + "%"
		db = db.Where(`(LOWER(id) LIKE ? ESCAPE '\' OR LOWER(display_name) LIKE ? ESCAPE '\' OR LOWER(email) LIKE ? ESCAPE '\')`, like, like, like)
	}
	var rows []userRow
	if err := db.Order(clause.OrderByColumn{Column: clause.Column{Name: "active"}, Desc: true}).Order("id").
		Limit(MaxUsersListed).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("%w: list users: %v", ErrUnavailable, err)
	}
	out := make([]User, len(rows))
	for i, r := range rows {
		out[i] = r.toUser()
	}
	return out, nil
}

// enroll adds the caller to its tenant's directory on its first write, as
// an active user; a user already there (inactive included) stays as it is.
// The service remembers whom it has enrolled, so a write costs the insert
// once per subject and process.
func (s *Service) enroll(ctx context.Context, c Caller) error {
	key := c.Tenant + "\x00" + c.Subject
	if _, ok := s.enrolled.Load(key); ok {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		Create(&userRow{TenantID: c.Tenant, ID: c.Subject, Active: true, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
		return fmt.Errorf("%w: enroll %q: %v", ErrUnavailable, c.Subject, err)
	}
	s.enrolled.Store(key, true)
	return nil
}

// ErrUnknownAssignee marks the invalid input of an assignee who is not an
// active user of the tenant, so that a transport can say how its callers
// list the users (MCP: list_users). The error is also a *ValidationError.
var ErrUnknownAssignee = errors.New("unknown assignee")

type unknownAssigneeError struct{ *ValidationError }

func (e unknownAssigneeError) Is(target error) bool { return target == ErrUnknownAssignee }
func (e unknownAssigneeError) Unwrap() error        { return e.ValidationError }

// checkAssignee enrolls the caller (so "me" is always a user) and refuses
// an assignee who is not an active user of the tenant; "" unassigns and
// nil leaves the assignee alone. A write whose key the ledger already holds
// is let through: its replay answers what it did, whoever has left since.
func (s *Service) checkAssignee(ctx context.Context, c Caller, key operations.Key, assignee *string) error {
	if err := s.enroll(ctx, c); err != nil {
		return err
	}
	if assignee == nil || *assignee == "" || *assignee == c.Subject {
		return nil
	}
	var n int64
	if err := s.db.WithContext(ctx).Model(&userRow{}).Where("tenant_id = ? AND id = ? AND active", c.Tenant, *assignee).
		Count(&n).Error; err != nil {
		return fmt.Errorf("%w: look up assignee: %v", ErrUnavailable, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := s.ledger.Lookup(ctx, key); err == nil {
		return nil
	}
	return unknownAssigneeError{invalidField("assignee", "%q is not an active user of this tenant; assign one of its users, \"me\" (yourself) or \"\" (nobody)", *assignee)}
}
