package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/server"
)

// validate is the one check of the settings the groups declare, made before
// anything is opened or listens, so a bad value stops a command with one
// line naming what to set.
func (c *config) validate(groups group) error {
	if groups&(groupHTTP|groupPublic) != 0 {
		if err := c.checkHTTP(groups&groupHTTP != 0); err != nil {
			return err
		}
	}
	if groups&groupDB != 0 {
		if err := c.checkDB(); err != nil {
			return err
		}
	}
	if groups&groupLog != 0 {
		if _, err := c.logger(io.Discard); err != nil {
			return err
		}
	}
	if groups&groupCursor != 0 {
		if _, err := c.cursorKey(); err != nil {
			return err
		}
	}
	if groups&groupEdge != 0 {
		if _, err := c.edge(); err != nil {
			return err
		}
	}
	if groups&groupApprove != 0 {
		if _, err := c.approvalPolicy(); err != nil {
			return err
		}
	}
	return nil
}

// resolve fills the derived defaults.
func (c *config) resolve() {
	if c.PublicURL == "" && c.Addr != "" {
		c.PublicURL = "http://" + c.Addr
		c.derivedPublicURL = true
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	if c.Audience == "" && c.PublicURL != "" {
		c.Audience = c.PublicURL + "/mcp"
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = defaultDatabaseURL
		if c.Dev {
			c.DatabaseURL = "sqlite://" + filepath.Join(c.DataDir, devDatabaseFile)
		}
	}
	if c.Issuer == "" && c.Dev {
		c.Issuer = devIssuer
	}
}

// keySources names the configured JWT key sources by their variables.
func (c *config) keySources() []string {
	var names []string
	if c.JWKSURL != "" {
		names = append(names, "TICKETD_JWT_JWKS_URL")
	}
	if c.PublicKeyFile != "" {
		names = append(names, "TICKETD_JWT_PUBLIC_KEY_FILE")
	}
	if c.HS256Secret != "" {
		names = append(names, "TICKETD_JWT_HS256_SECRET")
	}
	return names
}

// checkHTTP validates the public URL and, for a command that listens, the
// listen addresses. With --dev an address must be loopback: dev mode's
// secret sits on disk and its token is printed, so it must not be reachable
// from the network.
func (c *config) checkHTTP(listens bool) error {
	// The same check server.New makes, made here so that a bad URL stops
	// start-up before the database is opened.
	if _, err := server.ParsePublicURL(c.PublicURL); err != nil {
		return fmt.Errorf("TICKETD_PUBLIC_URL: %w", err)
	}
	if !listens {
		return nil
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("TICKETD_ADDR %q: want host:port, e.g. %s", c.Addr, defaultAddr)
	}
	if c.Dev && !server.IsLoopbackHost(host) {
		return fmt.Errorf("--dev listens on loopback only, and TICKETD_ADDR %q is not loopback: use 127.0.0.1:PORT, or configure a JWT key source and drop --dev", c.Addr)
	}
	if c.MetricsAddr != "" {
		host, _, err := net.SplitHostPort(c.MetricsAddr)
		if err != nil {
			return fmt.Errorf("TICKETD_METRICS_ADDR %q: want host:port, e.g. 127.0.0.1:9090", c.MetricsAddr)
		}
		if c.Dev && !server.IsLoopbackHost(host) {
			return fmt.Errorf("--dev listens on loopback only, and TICKETD_METRICS_ADDR %q is not loopback: use 127.0.0.1:PORT", c.MetricsAddr)
		}
	}
	return nil
}

// warnings returns advice about settings that work but are likely wrong.
func (c *config) warnings() []string {
	host, _, _ := net.SplitHostPort(c.Addr)
	if ip := net.ParseIP(host); c.derivedPublicURL && (host == "" || ip != nil && ip.IsUnspecified()) {
		return []string{fmt.Sprintf("TICKETD_PUBLIC_URL is not set, so clients are told the MCP resource is %s/mcp and tokens must carry that audience; set it to the URL clients use", c.PublicURL)}
	}
	return nil
}

// cursorWarning says what a missing cursor secret costs outside --dev
// (which keeps one in its data directory), or "".
func (c *config) cursorWarning() string {
	if c.Dev || c.CursorSecret != "" {
		return ""
	}
	return "TICKETD_CURSOR_SECRET is not set: list cursors are signed with a random key of this process, so they stop working after a restart and on other replicas or processes; set it to the same 32+ byte secret everywhere"
}

// approvalWarning says what a missing approval secret costs a server that
// asks for approval outside --dev, or "": an agent's retry carrying the
// signed answer may reach another replica or a restarted process.
func (c *config) approvalWarning() string {
	if c.Dev || c.Approval != "on" || c.ApprovalSecret != "" {
		return ""
	}
	return "TICKETD_APPROVAL_SECRET is not set: approval request states are signed with a random key of this process, so a retry with a person's answer that reaches another replica or a restarted process is refused and the person is asked again; set it to the same 32+ byte secret on every replica"
}

// checkDB validates the database URL without connecting.
func (c *config) checkDB() error {
	dialect, _, err := db.ParseURL(c.DatabaseURL)
	if err != nil {
		return fmt.Errorf("TICKETD_DATABASE_URL: %w", err)
	}
	if c.ReadDatabaseURL != "" {
		readDialect, _, err := db.ParseURL(c.ReadDatabaseURL)
		if err != nil {
			return fmt.Errorf("TICKETD_READ_DATABASE_URL: %w", err)
		}
		if dialect != db.Postgres || readDialect != db.Postgres {
			return fmt.Errorf("TICKETD_READ_DATABASE_URL: %w", db.ErrReplicaNotPostgres)
		}
	}
	return nil
}

// cursorKey returns the configured cursor key; nil lets the service pick a
// random one, which is right for a single process.
func (c *config) cursorKey() ([]byte, error) {
	if c.CursorSecret == "" {
		return nil, nil
	}
	if err := checkSecret("TICKETD_CURSOR_SECRET", c.CursorSecret); err != nil {
		return nil, err
	}
	return []byte(c.CursorSecret), nil
}

// checkSecret checks an HMAC key setting against the HS256 rule: a key at
// least as long as its hash output (minSecret).
func checkSecret(name, secret string) error {
	if len(secret) < minSecret {
		return fmt.Errorf("%s is %d bytes; it must be at least %d (generate one with: openssl rand -hex 32)", name, len(secret), minSecret)
	}
	return nil
}

// logger builds the structured logger; logs always go to stderr, so stdout
// stays free for the dev banner, token output and the stdio protocol.
func (c *config) logger(stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("TICKETD_LOG_LEVEL %q: want debug, info, warn or error", c.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.LogFormat {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	default:
		return nil, fmt.Errorf("TICKETD_LOG_FORMAT %q: want text or json", c.LogFormat)
	}
}
