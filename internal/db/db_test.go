package db_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		raw     string
		dialect db.Dialect
		dsnHas  string
	}{
		{"postgres://u@h:5432/d?sslmode=disable", db.Postgres, "postgres://u@h:5432/d"},
		{"postgresql://u@h/d", db.Postgres, "postgresql://u@h/d"},
		// The multi-host URL of a primary and its standby (docs/scale.md), as pgx reads it.
		{"postgres://u@h1:5432,h2:5432/d?target_session_attrs=read-write", db.Postgres, "h1:5432,h2:5432"},
		{"sqlite://ticketd.db", db.SQLite, "_txlock=immediate"},
		{"sqlite:///var/lib/ticketd/t.db?_pragma=cache_size(2000)", db.SQLite, "file:/var/lib/ticketd/t.db?"},
	}
	for _, c := range cases {
		dialect, dsn, err := db.ParseURL(c.raw)
		if err != nil || dialect != c.dialect || !strings.Contains(dsn, c.dsnHas) {
			t.Errorf("ParseURL(%q) = %s, %q, %v; want %s containing %q", c.raw, dialect, dsn, err, c.dialect, c.dsnHas)
		}
	}
	for _, raw := range []string{"", "mysql://x", "sqlite://", "sqlite://:memory:", "ticketd.db", "postgres://%zz"} {
		if _, _, err := db.ParseURL(raw); !errors.Is(err, db.ErrBadURL) {
			t.Errorf("ParseURL(%q) err = %v, want ErrBadURL", raw, err)
		}
	}
}

func TestOpenSQLiteAppliesPragmas(t *testing.T) {
	t.Parallel()
	d, err := db.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000"} {
		var got string
		if err := d.Gorm.Raw("PRAGMA " + pragma).Scan(&got).Error; err != nil || got != want {
			t.Errorf("PRAGMA %s = %q, %v; want %q", pragma, got, err, want)
		}
	}
}

func TestOpenUnreachablePostgresFailsClearly(t *testing.T) {
	t.Parallel()
	_, err := db.Open(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err == nil || !strings.Contains(err.Error(), "postgres database") {
		t.Errorf("err = %v, want a connect error naming the dialect", err)
	}
}

// TestOpenPostgresSetsSessionLimits checks that ticketd puts its own session
// limits on every PostgreSQL connection (defaults, or the configured ones),
// and that a parameter the DSN names explicitly wins.
func TestOpenPostgresSetsSessionLimits(t *testing.T) {
	t.Parallel()
	base := dbtest.PostgresURL(t)
	show := func(t *testing.T, d *db.DB, param string) string {
		t.Helper()
		var got string
		if err := d.Gorm.Raw("SHOW " + param).Scan(&got).Error; err != nil {
			t.Fatalf("SHOW %s: %v", param, err)
		}
		return got
	}
	t.Run("Defaults", func(t *testing.T) {
		d, err := db.Open(context.Background(), base)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for param, want := range map[string]string{
			"idle_in_transaction_session_timeout": "20s", "statement_timeout": "20s", "tcp_user_timeout": "20000",
			"tcp_keepalives_idle": "6", "tcp_keepalives_interval": "4", "tcp_keepalives_count": "3",
		} {
			if got := show(t, d, param); got != want {
				t.Errorf("%s = %q, want %q", param, got, want)
			}
		}
	})
	t.Run("Configured", func(t *testing.T) {
		d, err := db.OpenWith(context.Background(), base, db.Options{Session: db.Session{
			IdleInTransaction: 3 * time.Second, Statement: 40 * time.Second, TCP: 9 * time.Second,
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for param, want := range map[string]string{
			"idle_in_transaction_session_timeout": "3s", "statement_timeout": "40s", "tcp_user_timeout": "9000",
			"tcp_keepalives_idle": "3", "tcp_keepalives_interval": "2",
		} {
			if got := show(t, d, param); got != want {
				t.Errorf("%s = %q, want %q", param, got, want)
			}
		}
	})
	t.Run("DSNWins", func(t *testing.T) {
		d, err := db.Open(context.Background(), base+"&statement_timeout=45000")
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if got := show(t, d, "statement_timeout"); got != "45s" {
			t.Errorf("statement_timeout = %q, want the DSN's 45s", got)
		}
	})
}
