package tickets

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/fault"
	"github.com/ticketd/ticketd/internal/tracker"
)

// ErrExists: a project with that ID or key, or a user with that ID, already
// exists for the tenant.
var ErrExists = fault.ErrExists

var (
	projectIDPattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	projectKeyPattern = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,9}$`)
)

// MaxProjectName is the longest project name, in characters.
const MaxProjectName = 200

// CreateProject adds a project to the tenant. The ID is a lower-case slug
// (e.g. "support"); the key is 1–10 upper-case letters or digits starting
// with a letter (e.g. "SUP") and prefixes ticket keys.
//
// Errors: ErrInvalid, ErrExists, ErrUnavailable.
func (s *Service) CreateProject(ctx context.Context, tenant string, p Project) (Project, error) {
	p.ID = strings.ToLower(strings.TrimSpace(p.ID))
	p.Key = strings.ToUpper(strings.TrimSpace(p.Key))
	p.Name = strings.TrimSpace(p.Name)
	var errs []FieldError
	if !projectIDPattern.MatchString(p.ID) {
		errs = append(errs, FieldError{Field: "id", Message: "must be 1–64 of a-z, 0-9, '-' or '_', starting with a letter or digit"})
	}
	if !projectKeyPattern.MatchString(p.Key) {
		errs = append(errs, FieldError{Field: "key", Message: "must be 1–10 of A-Z or 0-9, starting with a letter"})
	}
	if msg := checkText(p.Name); msg != "" {
		errs = append(errs, FieldError{Field: "name", Message: msg})
	} else if n := utf8.RuneCountInString(p.Name); n == 0 || n > MaxProjectName {
		errs = append(errs, FieldError{Field: "name", Message: fmt.Sprintf("must be 1–%d characters after trimming", MaxProjectName)})
	}
	errs = append(errs, s.checkBackend(ctx, tenant, p.Backend)...)
	if len(errs) > 0 {
		return Project{}, &ValidationError{Fields: errs}
	}
	// The numbering starts at 1 from the column defaults: SQLite's
	// next_number, PostgreSQL's number_seq and the sequence its insert
	// trigger creates (migrations/postgres/00004_ticket_numbers.sql), in
	// this insert's transaction.
	row := projectRow{TenantID: tenant, ID: p.ID, Key: p.Key, Name: p.Name, CreatedAt: time.Now().UTC()}
	if b := p.Backend; b != nil {
		where, root, options := b.Columns()
		row.BackendKind, row.BackendRepository = &b.Kind, &where
		row.BackendAPIURL, row.BackendCredential, row.BackendOptions = nonEmpty(root), &b.Credential, nonEmpty(options)
	}
	err := s.db.WithContext(ctx).Create(&row).Error
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return Project{}, fmt.Errorf("project %q or key %q: %w", p.ID, p.Key, ErrExists)
	case err != nil:
		return Project{}, fmt.Errorf("%w: create project: %v", ErrUnavailable, err)
	}
	return row.toProject(), nil
}

// checkBackend validates (and trims, in place) a new project's tracker
// backend (Trackers.CheckBackend).
func (s *Service) checkBackend(ctx context.Context, tenant string, b *tracker.Backend) []FieldError {
	switch {
	case b == nil:
		return nil
	case s.trackers == nil:
		return []FieldError{{Field: "backend", Message: "this server has no tracker connector configured"}}
	}
	return s.trackers.CheckBackend(ctx, tenant, b)
}

// MapRetiredTokenEnvs maps every project stored with a token_env (before
// credentials) to the declared credential whose variable it named, if its
// tenant may use that credential, and clears the retired column. It returns
// a note for each project it cannot map, which stays unusable until an
// admin or the operator gives it a credential; the variable is never read.
//
// Errors: ErrUnavailable.
func (s *Service) MapRetiredTokenEnvs(ctx context.Context) (unmapped []string, err error) {
	type retired struct {
		TenantID string `gorm:"column:tenant_id"`
		ID       string `gorm:"column:id"`
		Env      string `gorm:"column:backend_token_env_retired"`
	}
	var rows []retired
	err = s.db.WithContext(ctx).Table("projects").Select("tenant_id, id, backend_token_env_retired").
		Where("backend_kind IS NOT NULL AND backend_credential IS NULL AND backend_token_env_retired IS NOT NULL").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("%w: read projects with a retired token_env: %v", ErrUnavailable, err)
	}
	for _, r := range rows {
		name, ok := "", false
		if s.trackers != nil {
			name, ok = s.trackers.CredentialForEnv(r.Env, r.TenantID)
		}
		if !ok {
			unmapped = append(unmapped, fmt.Sprintf("project %s of tenant %s names the retired token_env %s, which no credential declared for its tenant holds: "+
				"it is unusable until TICKETD_TRACKER_CREDENTIALS declares one (docs/trackers.md)", r.ID, r.TenantID, r.Env))
			continue
		}
		err := s.db.WithContext(ctx).Table("projects").Where("tenant_id = ? AND id = ? AND backend_credential IS NULL", r.TenantID, r.ID).
			Updates(map[string]any{"backend_credential": name, "backend_token_env_retired": nil}).Error
		if err != nil {
			return unmapped, fmt.Errorf("%w: map project %s to credential %s: %v", ErrUnavailable, r.ID, name, err)
		}
	}
	return unmapped, nil
}

// ListProjects returns all of the tenant's projects, ordered by ID.
//
// Errors: ErrUnavailable.
func (s *Service) ListProjects(ctx context.Context, tenant string) ([]Project, error) {
	var rows []projectRow
	if err := s.db.WithContext(ctx).Where("tenant_id = ?", tenant).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("%w: list projects: %v", ErrUnavailable, err)
	}
	out := make([]Project, len(rows))
	for i, r := range rows {
		out[i] = r.toProject()
	}
	return out, nil
}
