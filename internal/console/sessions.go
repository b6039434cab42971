package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/authn"
)

// MaxSessionAge bounds a console session whatever the token it signed in
// with allows (agents' tokens may live for weeks; a browser tab should not).
const MaxSessionAge = 12 * time.Hour

// errNoSession is a session secret with no live session: never issued,
// signed out, or expired.
var errNoSession = errors.New("no such console session")

// Sessions stores console sessions in the database (table console_sessions),
// so that the console's cookie is a secret of its own rather than the bearer
// token (which would work on /mcp and /api for as long as the token lives),
// any replica can serve any request, and sign-out ends the session
// everywhere at once. Only the secret's SHA-256 is stored: the table gives
// nobody a way in.
type Sessions struct {
	db *gorm.DB
}

// NewSessions returns the session store over a migrated database.
func NewSessions(db *gorm.DB) *Sessions { return &Sessions{db: db} }

type sessionRow struct {
	ID        string
	TenantID  string
	Subject   string
	Scopes    string
	ExpiresAt time.Time
	CreatedAt time.Time
}

func (sessionRow) TableName() string { return "console_sessions" }

func sessionID(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// cookieValue is what the cookie holds: the tenant, base64url-encoded (the
// table's keys lead with it, docs/scale.md), a dot, and the secret (base32, so
// without dots).
func cookieValue(tenant, secret string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(tenant)) + "." + secret
}

// parseCookie splits a cookie value into tenant and secret; ok is false for
// anything cookieValue did not make.
func parseCookie(v string) (tenant, secret string, ok bool) {
	t, secret, found := strings.Cut(v, ".")
	b, err := base64.RawURLEncoding.DecodeString(t)
	if !found || err != nil || len(b) == 0 || secret == "" {
		return "", "", false
	}
	return string(b), secret, true
}

// create starts a session for p, ending when p's token does or after
// MaxSessionAge, and returns the cookie's value. Expired sessions are
// deleted on the way, so the table holds only live ones.
func (s *Sessions) create(ctx context.Context, p authn.Principal) (string, error) {
	now := time.Now().UTC()
	if err := s.db.WithContext(ctx).Where("expires_at < ?", now).Delete(&sessionRow{}).Error; err != nil {
		return "", fmt.Errorf("delete expired console sessions: %w", err)
	}
	scopes, err := json.Marshal(p.Scopes)
	if err != nil {
		return "", fmt.Errorf("encode scopes: %w", err)
	}
	secret := rand.Text() + rand.Text() // 2 × 128 bits
	expires := now.Add(MaxSessionAge)
	if !p.AcceptUntil.IsZero() && p.AcceptUntil.Before(expires) {
		expires = p.AcceptUntil.UTC()
	}
	row := sessionRow{ID: sessionID(secret), TenantID: p.Tenant, Subject: p.Subject, Scopes: string(scopes), ExpiresAt: expires, CreatedAt: now}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return "", fmt.Errorf("store console session: %w", err)
	}
	return cookieValue(p.Tenant, secret), nil
}

// principal returns the live session's principal, or errNoSession.
func (s *Sessions) principal(ctx context.Context, cookie string) (authn.Principal, error) {
	tenant, secret, ok := parseCookie(cookie)
	if !ok {
		return authn.Principal{}, errNoSession
	}
	var row sessionRow
	err := s.db.WithContext(ctx).Where("tenant_id = ? AND id = ? AND expires_at > ?", tenant, sessionID(secret), time.Now().UTC()).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return authn.Principal{}, errNoSession
	case err != nil:
		return authn.Principal{}, fmt.Errorf("read console session: %w", err)
	}
	var scopes []string
	if err := json.Unmarshal([]byte(row.Scopes), &scopes); err != nil {
		return authn.Principal{}, fmt.Errorf("decode console session scopes: %w", err)
	}
	return authn.Principal{Tenant: row.TenantID, Subject: row.Subject, Scopes: scopes, Expires: row.ExpiresAt, AcceptUntil: row.ExpiresAt}, nil
}

// end deletes the session, so its secret opens nothing from now on.
func (s *Sessions) end(ctx context.Context, cookie string) error {
	tenant, secret, ok := parseCookie(cookie)
	if !ok {
		return nil // nothing to end
	}
	if err := s.db.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenant, sessionID(secret)).Delete(&sessionRow{}).Error; err != nil {
		return fmt.Errorf("end console session: %w", err)
	}
	return nil
}
