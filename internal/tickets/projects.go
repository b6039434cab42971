package tickets

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/tracker"
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
	errs = append(errs, s.checkBackend(p.Backend)...)
	if len(errs) > 0 {
		return Project{}, &ValidationError{Fields: errs}
	}
	// The numbering starts at 1 from the column defaults: SQLite's
	// next_number, PostgreSQL's number_seq and the sequence its insert
	// trigger creates (migrations/postgres/00004_ticket_numbers.sql), in
	// this insert's transaction.
	row := projectRow{TenantID: tenant, ID: p.ID, Key: p.Key, Name: p.Name, CreatedAt: time.Now().UTC()}
	if b := p.Backend; b != nil {
		row.BackendKind, row.BackendRepository = &b.Kind, &b.Repository
		row.BackendAPIURL, row.BackendTokenEnv = nonEmpty(b.APIURL), &b.TokenEnv
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

var (
	repositoryPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$`)
	tokenEnvPattern   = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,127}$`)
)

// checkBackend validates (and trims, in place) a tracker backend. The
// token itself is never given: only the name of the environment variable
// that holds it.
func (s *Service) checkBackend(b *tracker.Backend) []FieldError {
	if b == nil {
		return nil
	}
	b.Kind, b.Repository = strings.TrimSpace(b.Kind), strings.TrimSpace(b.Repository)
	b.APIURL, b.TokenEnv = strings.TrimSpace(b.APIURL), strings.TrimSpace(b.TokenEnv)
	var errs []FieldError
	if s.tracked.Open == nil {
		return []FieldError{{"backend", "this server has no tracker connector configured"}}
	}
	if b.Kind != tracker.KindGitHub {
		errs = append(errs, FieldError{"backend.kind", fmt.Sprintf("must be %q", tracker.KindGitHub)})
	}
	if !repositoryPattern.MatchString(b.Repository) {
		errs = append(errs, FieldError{"backend.repository", "must be owner/name"})
	}
	if b.APIURL != "" {
		if u, err := url.Parse(b.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			errs = append(errs, FieldError{"backend.api_url", "must be an http(s) URL of the API root, e.g. https://api.github.com/"})
		}
	}
	if !tokenEnvPattern.MatchString(b.TokenEnv) {
		errs = append(errs, FieldError{"backend.token_env", "must name an environment variable (A-Z, 0-9, _) that holds the token; the token itself is never sent"})
	}
	return errs
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
