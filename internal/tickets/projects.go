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
)

// ErrExists: a project with that ID or key already exists for the tenant.
var ErrExists = errors.New("already exists")

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
		errs = append(errs, FieldError{"id", "must be 1–64 of a-z, 0-9, '-' or '_', starting with a letter or digit"})
	}
	if !projectKeyPattern.MatchString(p.Key) {
		errs = append(errs, FieldError{"key", "must be 1–10 of A-Z or 0-9, starting with a letter"})
	}
	if msg := checkText(p.Name); msg != "" {
		errs = append(errs, FieldError{"name", msg})
	} else if n := utf8.RuneCountInString(p.Name); n == 0 || n > MaxProjectName {
		errs = append(errs, FieldError{"name", fmt.Sprintf("must be 1–%d characters after trimming", MaxProjectName)})
	}
	if len(errs) > 0 {
		return Project{}, &ValidationError{Fields: errs}
	}
	// The numbering starts at 1 from the column defaults: SQLite's
	// next_number, PostgreSQL's number_seq and the sequence its insert
	// trigger creates (migrations/postgres/00004_ticket_numbers.sql), in
	// this insert's transaction.
	row := projectRow{TenantID: tenant, ID: p.ID, Key: p.Key, Name: p.Name, CreatedAt: time.Now().UTC()}
	err := s.db.WithContext(ctx).Create(&row).Error
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return Project{}, fmt.Errorf("project %q or key %q: %w", p.ID, p.Key, ErrExists)
	case err != nil:
		return Project{}, fmt.Errorf("%w: create project: %v", ErrUnavailable, err)
	}
	return row.toProject(), nil
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
