// Package people is the tenant directory (docs/contract.md#people): who can
// be assigned, kept in the users table. Operators manage it (Create, Update,
// List); the ticket service enrolls a writer on its first write and asks
// whether an assignee is an active user (Enroll, Assignable).
package people

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ticketd/ticketd/internal/fault"
)

// Limits of the tenant directory.
const (
	MaxUserID      = 200 // an assignee's longest, too
	MaxDisplayName = 200
	MaxEmail       = 254
	MaxQuery       = 500
	// MaxListed bounds one List answer; a query narrows it.
	MaxListed = 100
)

// Me names the caller in an assignee, so no user can have it as ID.
const Me = "me"

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

// Patch changes a user: nil fields stay.
type Patch struct {
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

// Directory is the tenants' users over a migrated database.
type Directory struct {
	db    *gorm.DB
	reads *gorm.DB // List's handle: a replica's, else db
	// enrolled remembers the tenant and subject pairs already in the
	// directory, so a write costs Enroll's insert once per subject and process.
	enrolled sync.Map
}

// NewDirectory returns a Directory writing to db and listing from reads
// (db when nil).
func NewDirectory(db, reads *gorm.DB) *Directory {
	if reads == nil {
		reads = db
	}
	return &Directory{db: db, reads: reads}
}

// text checks and trims one of a user's text fields.
func text(field, s string, maxLen int, required bool) (string, error) {
	if msg := fault.CheckText(s); msg != "" {
		return "", fault.Invalid(field, "%s", msg)
	}
	s = fault.CanonicalText(s, false)
	switch n := utf8.RuneCountInString(s); {
	case required && n == 0:
		return "", fault.Invalid(field, "is required and must not be blank")
	case n > maxLen:
		return "", fault.Invalid(field, "must be at most %d characters after trimming, got %d", maxLen, n)
	}
	return s, nil
}

// Create adds an active user to the tenant's directory (u.Active is
// ignored: Update deactivates).
//
// Errors: fault.ErrInvalid, fault.ErrExists, fault.ErrUnavailable.
func (d *Directory) Create(ctx context.Context, tenant string, u User) (User, error) {
	id, err := text("id", u.ID, MaxUserID, true)
	if err != nil {
		return User{}, err
	}
	if id == Me {
		return User{}, fault.Invalid("id", "%q names the caller in an assignee and cannot be a user's ID", Me)
	}
	name, err := text("display_name", u.DisplayName, MaxDisplayName, false)
	if err != nil {
		return User{}, err
	}
	email, err := text("email", u.Email, MaxEmail, false)
	if err != nil {
		return User{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	row := userRow{TenantID: tenant, ID: id, DisplayName: name, Email: email, Active: true, CreatedAt: now, UpdatedAt: now}
	err = d.db.WithContext(ctx).Create(&row).Error
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return User{}, fmt.Errorf("user %q: %w", id, fault.ErrExists)
	case err != nil:
		return User{}, fmt.Errorf("%w: create user: %v", fault.ErrUnavailable, err)
	}
	d.enrolled.Store(tenant+"\x00"+id, true)
	return row.toUser(), nil
}

// Update changes the tenant's user id.
//
// Errors: fault.ErrInvalid, fault.ErrNotFound, fault.ErrUnavailable.
func (d *Directory) Update(ctx context.Context, tenant, id string, p Patch) (User, error) {
	set := map[string]any{"updated_at": time.Now().UTC().Truncate(time.Microsecond)}
	if p.DisplayName != nil {
		v, err := text("display_name", *p.DisplayName, MaxDisplayName, false)
		if err != nil {
			return User{}, err
		}
		set["display_name"] = v
	}
	if p.Email != nil {
		v, err := text("email", *p.Email, MaxEmail, false)
		if err != nil {
			return User{}, err
		}
		set["email"] = v
	}
	if p.Active != nil {
		set["active"] = *p.Active
	}
	var row userRow
	err := d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&userRow{}).Where("tenant_id = ? AND id = ?", tenant, id).Updates(set)
		switch {
		case res.Error != nil:
			return fmt.Errorf("%w: update user: %v", fault.ErrUnavailable, res.Error)
		case res.RowsAffected == 0:
			return fmt.Errorf("user %q: %w", id, fault.ErrNotFound)
		}
		return tx.Where("tenant_id = ? AND id = ?", tenant, id).Take(&row).Error
	})
	if err != nil {
		return User{}, err
	}
	return row.toUser(), nil
}

// List returns the tenant's users whose ID, display name or e-mail
// contains query (any case; empty: all), active first, then by ID; at most
// MaxListed.
//
// Errors: fault.ErrInvalid, fault.ErrUnavailable.
func (d *Directory) List(ctx context.Context, tenant, query string) ([]User, error) {
	q, err := text("query", query, MaxQuery, false)
	if err != nil {
		return nil, err
	}
	db := d.reads.WithContext(ctx).Where("tenant_id = ?", tenant)
	if q != "" {
		like := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(strings.ToLower(q)) + "%"
		db = db.Where(`(LOWER(id) LIKE ? ESCAPE '\' OR LOWER(display_name) LIKE ? ESCAPE '\' OR LOWER(email) LIKE ? ESCAPE '\')`, like, like, like)
	}
	var rows []userRow
	if err := db.Order(clause.OrderByColumn{Column: clause.Column{Name: "active"}, Desc: true}).Order("id").
		Limit(MaxListed).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("%w: list users: %v", fault.ErrUnavailable, err)
	}
	out := make([]User, len(rows))
	for i, r := range rows {
		out[i] = r.toUser()
	}
	return out, nil
}

// Enroll adds subject to its tenant's directory, as an active user; a user
// already there (inactive included) stays as it is.
//
// Errors: fault.ErrUnavailable.
func (d *Directory) Enroll(ctx context.Context, tenant, subject string) error {
	key := tenant + "\x00" + subject
	if _, ok := d.enrolled.Load(key); ok {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := d.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		Create(&userRow{TenantID: tenant, ID: subject, Active: true, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
		return fmt.Errorf("%w: enroll %q: %v", fault.ErrUnavailable, subject, err)
	}
	d.enrolled.Store(key, true)
	return nil
}

// Get returns the tenant's user id, read from the primary: it decides a
// write (a tracker finds an assignee's account by the user's email).
//
// Errors: fault.ErrNotFound, fault.ErrUnavailable.
func (d *Directory) Get(ctx context.Context, tenant, id string) (User, error) {
	var row userRow
	err := d.db.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenant, id).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return User{}, fmt.Errorf("user %q: %w", id, fault.ErrNotFound)
	case err != nil:
		return User{}, fmt.Errorf("%w: read user: %v", fault.ErrUnavailable, err)
	}
	return row.toUser(), nil
}

// Assignable reports whether id is an active user of the tenant, read from
// the primary: it decides a write.
//
// Errors: fault.ErrUnavailable.
func (d *Directory) Assignable(ctx context.Context, tenant, id string) (bool, error) {
	var n int64
	if err := d.db.WithContext(ctx).Model(&userRow{}).Where("tenant_id = ? AND id = ? AND active", tenant, id).
		Count(&n).Error; err != nil {
		return false, fmt.Errorf("%w: look up assignee: %v", fault.ErrUnavailable, err)
	}
	return n > 0, nil
}

// ErrUnknownAssignee marks the invalid input of an assignee who is not an
// active user of the tenant, so that a transport can say how its callers
// list the users (MCP: list_users). The error is also a
// *fault.ValidationError.
var ErrUnknownAssignee = errors.New("unknown assignee")

type unknownAssigneeError struct{ *fault.ValidationError }

func (e unknownAssigneeError) Is(target error) bool { return target == ErrUnknownAssignee }
func (e unknownAssigneeError) Unwrap() error        { return e.ValidationError }

// CheckAssignee enrolls subject (so "me" is always a user) and refuses an
// assignee who is not an active user of the tenant; "" unassigns and nil
// leaves the assignee alone. recorded reports whether the write's operation
// is already in the ledger: such a write is let through, since its replay
// answers what it did, whoever has left since.
//
// Errors: fault.ErrInvalid (ErrUnknownAssignee), fault.ErrUnavailable.
func (d *Directory) CheckAssignee(ctx context.Context, tenant, subject string, assignee *string, recorded func() bool) error {
	if err := d.Enroll(ctx, tenant, subject); err != nil {
		return err
	}
	if assignee == nil || *assignee == "" || *assignee == subject {
		return nil
	}
	if ok, err := d.Assignable(ctx, tenant, *assignee); ok || err != nil || recorded() {
		return err
	}
	return unknownAssigneeError{fault.Invalid("assignee", "%q is not an active user of this tenant; assign one of its users, \"me\" (yourself) or \"\" (nobody)", *assignee)}
}
