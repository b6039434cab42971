package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeConfigErrors checks that each misconfiguration stops serve with a
// one-line error naming what to set, before it opens the database (so before
// it listens) and without printing anything to stdout.
func TestServeConfigErrors(t *testing.T) {
	t.Parallel()
	notPEM := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(notPEM, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string // changes to the valid base configuration; "" unsets
		args []string
		want string
	}{
		{"BadDatabaseURL", []string{"TICKETD_DATABASE_URL", "mysql://db/x"}, nil, "TICKETD_DATABASE_URL"},
		{"EmptySQLitePath", []string{"TICKETD_DATABASE_URL", "sqlite://"}, nil, "the sqlite path is empty"},
		{"UnreadableKeyFile", []string{"TICKETD_JWT_HS256_SECRET", "", "TICKETD_JWT_PUBLIC_KEY_FILE", "/nonexistent/key.pem"}, nil, "TICKETD_JWT_PUBLIC_KEY_FILE: open /nonexistent/key.pem"},
		{"KeyFileNotPEM", []string{"TICKETD_JWT_HS256_SECRET", "", "TICKETD_JWT_PUBLIC_KEY_FILE", notPEM}, nil, "no PEM block"},
		{"ShortHS256Secret", []string{"TICKETD_JWT_HS256_SECRET", "too-short"}, nil, "TICKETD_JWT_HS256_SECRET: HS256 secret must be at least 32 bytes"},
		{"UnknownFlag", nil, []string{"--bogus"}, "flag provided but not defined: -bogus"},
		{"StrayArgument", nil, []string{"extra"}, `unexpected argument "extra"`},
		{"NoKeySource", []string{"TICKETD_JWT_HS256_SECRET", ""}, nil, errNoKeySource.Error()},
		{"TwoKeySources", []string{"TICKETD_JWT_JWKS_URL", "https://idp.test/jwks"}, nil, "more than one JWT key source"},
		{"NoIssuer", []string{"TICKETD_JWT_ISSUER", ""}, nil, "set TICKETD_JWT_ISSUER"},
		{"NonLoopbackDev", []string{"TICKETD_JWT_HS256_SECRET", "", "TICKETD_ADDR", "0.0.0.0:0"}, []string{"--dev"}, "--dev listens on loopback only"},
		{"NonLoopbackDevFlag", []string{"TICKETD_JWT_HS256_SECRET", ""}, []string{"--dev", "--addr", ":8080"}, "is not loopback"},
		{"DevWithJWKS", []string{"TICKETD_JWT_HS256_SECRET", "", "TICKETD_JWT_JWKS_URL", "https://idp.test/jwks"}, []string{"--dev"}, "--dev mints its own HS256 tokens"},
		{"BadAddr", []string{"TICKETD_ADDR", "8080"}, nil, "TICKETD_ADDR"},
		{"BadPublicURL", []string{"TICKETD_PUBLIC_URL", "tickets.example.com"}, nil, "TICKETD_PUBLIC_URL"},
		{"PublicURLWithPath", []string{"TICKETD_PUBLIC_URL", "https://example.com/ticketd"}, nil, "must be an origin"},
		{"PublicURLWithCredentials", []string{"TICKETD_PUBLIC_URL", "https://u:s3cret@example.com"}, nil, `"https://u:xxxxx@example.com" must be an origin`},
		{"BadLogFormat", []string{"TICKETD_LOG_FORMAT", "xml"}, nil, "TICKETD_LOG_FORMAT"},
		{"BadLogLevel", []string{"TICKETD_LOG_LEVEL", "loud"}, nil, "TICKETD_LOG_LEVEL"},
		{"BadMigrate", []string{"TICKETD_MIGRATE", "sometimes"}, nil, "TICKETD_MIGRATE"},
		{"ShortCursorSecret", []string{"TICKETD_CURSOR_SECRET", "short"}, nil, "TICKETD_CURSOR_SECRET"},
		{"BadWebhookRetryMin", []string{"TICKETD_WEBHOOK_RETRY_MIN", "soon"}, nil, "TICKETD_WEBHOOK_RETRY_MIN"},
		{"NegativeWebhookRetryMinFlag", nil, []string{"--webhook-retry-min", "-1s"}, "--webhook-retry-min -1s"},
		{"ZeroWebhookMaxAttempts", []string{"TICKETD_WEBHOOK_MAX_ATTEMPTS", "0"}, nil, "TICKETD_WEBHOOK_MAX_ATTEMPTS"},
		{"BadWebhookAllowPrivate", []string{"TICKETD_WEBHOOK_ALLOW_PRIVATE", "maybe"}, nil, "TICKETD_WEBHOOK_ALLOW_PRIVATE"},
		// A tracker credential is never one of ticketd's own secrets.
		{"TrackerCredentialOfTicketd", []string{"TICKETD_TRACKER_CREDENTIALS", "gh=GH_TOKEN,steal=TICKETD_JWT_HS256_SECRET"}, nil, "TICKETD_JWT_HS256_SECRET is one of ticketd's own settings"},
		{"TrackerCredentialOfTicketdLowerCase", []string{"TICKETD_TRACKER_CREDENTIALS", "steal=ticketd_database_url@acme"}, nil, "ticketd_database_url is one of ticketd's own settings"},
		{"TrackerCredentialFlag", nil, []string{"--tracker-credentials", "x=TICKETD_APPROVAL_SECRET"}, "--tracker-credentials"},
		{"TrackerCredentialMalformed", []string{"TICKETD_TRACKER_CREDENTIALS", "GH_TOKEN"}, nil, "want NAME=ENV_VAR"},
		{"TrackerCredentialBadVariable", []string{"TICKETD_TRACKER_CREDENTIALS", "gh=GH TOKEN"}, nil, "is not an environment variable name"},
		{"TrackerCredentialTwice", []string{"TICKETD_TRACKER_CREDENTIALS", "gh=A,gh=B"}, nil, "declared twice"},
		{"TrackerCredentialNoTenant", []string{"TICKETD_TRACKER_CREDENTIALS", "gh=A@"}, nil, "no tenant after @"},
		{"TrackerHostWithScheme", []string{"TICKETD_TRACKER_HOSTS", "https://api.github.com"}, nil, "TICKETD_TRACKER_HOSTS"},
		{"BadTrackerAllowPrivate", []string{"TICKETD_TRACKER_ALLOW_PRIVATE", "maybe"}, nil, "TICKETD_TRACKER_ALLOW_PRIVATE"},
		{"ZeroWebhookConcurrency", []string{"TICKETD_WEBHOOK_CONCURRENCY", "0"}, nil, "TICKETD_WEBHOOK_CONCURRENCY"},
		{"BadWebhookRescueAfter", []string{"TICKETD_WEBHOOK_RESCUE_AFTER", "soon"}, nil, "TICKETD_WEBHOOK_RESCUE_AFTER"},
		{"ShortDBStatementTimeout", []string{"TICKETD_DB_STATEMENT_TIMEOUT", "500ms"}, nil, "TICKETD_DB_STATEMENT_TIMEOUT"},
		{"BadDBIdleTimeout", []string{"TICKETD_DB_IDLE_IN_TRANSACTION_TIMEOUT", "soon"}, nil, "TICKETD_DB_IDLE_IN_TRANSACTION_TIMEOUT"},
		{"ZeroDBTCPTimeoutFlag", nil, []string{"--db-tcp-timeout", "0s"}, "--db-tcp-timeout 0s"},
		// SQLite's pool is 4 connections: a cap of 4, or none, would let one tenant hold them all.
		{"NegativeTenantConcurrency", []string{"TICKETD_TENANT_CONCURRENCY", "-1"}, nil, "TICKETD_TENANT_CONCURRENCY"},
		{"ZeroAdmissionWait", []string{"TICKETD_ADMISSION_WAIT", "0s"}, nil, "TICKETD_ADMISSION_WAIT"},
		{"ZeroTenantQueue", []string{"TICKETD_TENANT_QUEUE", "0"}, nil, "TICKETD_TENANT_QUEUE"},
		{"ZeroTrackerConcurrency", []string{"TICKETD_TRACKER_CONCURRENCY", "0"}, nil, "TICKETD_TRACKER_CONCURRENCY"},
		{"BadShutdownGrace", []string{"TICKETD_SHUTDOWN_GRACE", "soon"}, nil, "TICKETD_SHUTDOWN_GRACE"},
		{"UnknownToolset", []string{"TICKETD_TOOLSETS", "tickets,bulkk"}, nil, `unknown toolset "bulkk"`},
		{"UnknownToolsetFlag", nil, []string{"--toolsets", "everything"}, `--toolsets everything: unknown toolset "everything"`},
		{"FlagOverridesEnv", nil, []string{"--database-url", "mysql://db/x"}, "TICKETD_DATABASE_URL"},
		{"BadReadDatabaseURL", []string{"TICKETD_READ_DATABASE_URL", "mysql://db/x"}, nil, "TICKETD_READ_DATABASE_URL"},
		{"ReadReplicaOfSQLite", []string{"TICKETD_READ_DATABASE_URL", "postgres://standby/ticketd"}, nil, "TICKETD_READ_DATABASE_URL: a read replica needs PostgreSQL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			dbFile := filepath.Join(dir, "ticketd.db")
			env := with(baseEnv("sqlite://"+dbFile), tc.env...)
			dataDir := filepath.Join(dir, ".ticketd")
			args := append([]string{"ticketd", "serve", "--data-dir", dataDir}, tc.args...)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, getenv(env), nil, &stdout, &stderr)
			if err == nil {
				t.Fatal("run succeeded, want a configuration error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q, want one line containing %q", msg, tc.want)
			}
			if stdout.Len() > 0 || strings.Contains(stderr.String(), "listening") {
				t.Fatalf("printed before failing:\nstdout: %s\nstderr: %s", &stdout, &stderr)
			}
			if _, err := os.Stat(dbFile); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the database was opened before the configuration was checked (stat: %v)", err)
			}
			if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("dev mode wrote %s before the configuration was checked (stat: %v)", dataDir, err)
			}
		})
	}
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"UnknownCommand", []string{"frobnicate"}, nil, `unknown command "frobnicate"`},
		{"TokenWithoutTenant", []string{"token", "--subject", "s"}, baseEnv(""), "--tenant is required"},
		{"TokenWithoutSubject", []string{"token", "--tenant", "t"}, baseEnv(""), "--subject is required"},
		{"TokenWithoutSecret", []string{"token", "--tenant", "t", "--subject", "s"}, with(baseEnv(""), "TICKETD_JWT_HS256_SECRET", ""), "set TICKETD_JWT_HS256_SECRET, or use --dev"},
		{"TokenWithPublicKey", []string{"token", "--tenant", "t", "--subject", "s"}, with(baseEnv(""), "TICKETD_JWT_HS256_SECRET", "", "TICKETD_JWT_PUBLIC_KEY_FILE", "k.pem"), "identity provider"},
		{"TokenBadTenant", []string{"token", "--tenant", "a b", "--subject", "s"}, baseEnv(""), "tenant"},
		{"TokenBadTTL", []string{"token", "--tenant", "t", "--subject", "s", "--ttl", "-1h"}, baseEnv(""), "TTL must be positive"},
		{"MigrateBadURL", []string{"migrate", "--database-url", "mysql://x"}, nil, "TICKETD_DATABASE_URL"},
		{"StdioWithoutToken", []string{"stdio"}, baseEnv("sqlite://" + filepath.Join(t.TempDir(), "s.db")), "set TICKETD_TOKEN"},
		{"StdioUnknownToolset", []string{"stdio"}, with(baseEnv("sqlite://"+filepath.Join(t.TempDir(), "s.db")), "TICKETD_TOOLSETS", "nope"), `unknown toolset "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout bytes.Buffer
			err := run(context.Background(), append([]string{"ticketd"}, tc.args...), getenv(tc.env), nil, &stdout, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("run = %v, want one line containing %q", err, tc.want)
			}
			if stdout.Len() > 0 {
				t.Fatalf("printed %q on stdout before failing", &stdout)
			}
		})
	}
}

func TestHelpListsCommandsAndSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"serve", "migrate", "projects create", "projects list", "prune", "token", "stdio", "version", "--dev"}},
		{[]string{"prune", "-h"}, []string{"-older-than", "-dry-run", "-batch-size", "TICKETD_DATABASE_URL", "720h"}},
		{[]string{"projects", "create", "-h"}, []string{"ticketd projects create", "-tenant", "-id", "-key", "-name", "TICKETD_DATABASE_URL", "-dev"}},
		{[]string{"projects", "list", "-h"}, []string{"-tenant", "TICKETD_DATABASE_URL"}},
		{[]string{"help"}, []string{"serve", "migrate", "token", "stdio", "version"}},
		{[]string{"serve", "-h"}, []string{"-addr", "TICKETD_ADDR", "TICKETD_DATABASE_URL", "TICKETD_PUBLIC_URL", "TICKETD_JWT_ISSUER",
			"TICKETD_JWT_AUDIENCE", "TICKETD_JWT_JWKS_URL", "TICKETD_JWT_PUBLIC_KEY_FILE", "TICKETD_JWT_HS256_SECRET",
			"TICKETD_JWT_TENANT_CLAIM", "TICKETD_LOG_FORMAT", "TICKETD_LOG_LEVEL", "TICKETD_CURSOR_SECRET", "TICKETD_MIGRATE", "-dev", "-data-dir",
			"TICKETD_DB_IDLE_IN_TRANSACTION_TIMEOUT", "TICKETD_DB_STATEMENT_TIMEOUT", "TICKETD_DB_TCP_TIMEOUT"}},
		{[]string{"token", "-h"}, []string{"-tenant", "-subject", "-scope", "-ttl", "TICKETD_JWT_HS256_SECRET"}},
		{[]string{"migrate", "-h"}, []string{"TICKETD_DATABASE_URL"}},
	} {
		var stdout bytes.Buffer
		// A secret in the environment must not show up as a flag default.
		err := run(context.Background(), append([]string{"ticketd"}, tc.args...), getenv(baseEnv("sqlite://x.db")), nil, &stdout, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%v: help lacks %q:\n%s", tc.args, w, &stdout)
			}
		}
		if strings.Contains(stdout.String(), testSecret) {
			t.Errorf("%v: help shows the HS256 secret from the environment", tc.args)
		}
	}
}

// TestSubcommandHelpListsOnlyWhatItUses: every command answers -h with
// success and lists the settings it uses, and none it cannot: stdio listens
// nowhere, token mints HS256 tokens only (its -addr stays: the audience of
// the token derives from it, as serve's does).
func TestSubcommandHelpListsOnlyWhatItUses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args          []string
		want, notWant []string
	}{
		{[]string{"projects", "-h"}, []string{"ticketd projects create", "ticketd projects list"}, nil},
		{[]string{"projects", "help"}, []string{"ticketd projects create", "ticketd projects list"}, nil},
		{[]string{"stdio", "-h"}, []string{"-token", "-public-url", "-jwt-jwks-url", "-migrate", "-read-only"}, []string{"-addr", "-metrics-addr", "-webhook"}},
		{[]string{"token", "-h"}, []string{"-tenant", "-addr", "-public-url", "-jwt-hs256-secret", "-jwt-issuer"}, []string{"jwks", "public-key-file", "-log-level"}},
		{[]string{"serve", "-h"}, []string{"-addr", "-read-only", "-webhook-retry-min duration", "-webhook-max-attempts count", "-migrate\n"}, nil},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"ticketd"}, tc.args...), getenv(baseEnv("sqlite://x.db")), nil, &stdout, &stderr)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		help := stdout.String() + stderr.String() // stdio's help goes to stderr: stdout is the protocol
		for _, w := range tc.want {
			if !strings.Contains(help, w) {
				t.Errorf("%v: help lacks %q:\n%s", tc.args, w, help)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(help, w) {
				t.Errorf("%v: help offers %q, which the command cannot use:\n%s", tc.args, w, help)
			}
		}
	}
}

// TestSwitchesAndTypedSettings: a switch given alone is true, and a typed
// setting from the environment and from a flag decodes the same way.
func TestSwitchesAndTypedSettings(t *testing.T) {
	t.Parallel()
	env := getenv(map[string]string{"TICKETD_WEBHOOK_RETRY_MIN": "3s", "TICKETD_MIGRATE": "false"})
	cfg, err := parseConfig(flag.NewFlagSet("serve", flag.ContinueOnError), groupHTTP|groupMigrate|groupEdge|groupWebhook|groupTracker|groupTools,
		[]string{"--read-only", "--webhook-max-attempts", "4"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ReadOnly || cfg.Migrate || cfg.WebhookRetryMin != 3*time.Second || cfg.WebhookMaxAttempts != 4 || cfg.WebhookAllowPrivate {
		t.Errorf("config %+v, want read-only, no migration, retry after 3s, 4 attempts, no private URLs", cfg)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"ticketd", "version"}, getenv(nil), nil, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if out := stdout.String(); !strings.HasPrefix(out, "ticketd ") || strings.Count(out, "\n") != 1 || len(out) < len("ticketd x\n") {
		t.Fatalf("version printed %q, want one line \"ticketd VERSION\"", out)
	}
}

func TestWarnsWhenPublicURLDerivesFromWildcardAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr, publicURL string
		warn            bool
	}{
		{"0.0.0.0:8080", "", true},
		{"[::]:8080", "", true},
		{":8080", "", true},
		{"0.0.0.0:8080", "https://tickets.example.com", false},
		{"127.0.0.1:8080", "", false},
	} {
		c := &config{Addr: tc.addr, PublicURL: tc.publicURL}
		c.resolve()
		if got := len(c.warnings()) > 0; got != tc.warn {
			t.Errorf("addr %q, public URL %q: warned %v, want %v", tc.addr, tc.publicURL, got, tc.warn)
		}
	}
}

// TestEveryStoreCommandReadsTheTrackerSettings: stdio and the projects
// commands open the store as serve does, so they wire tracker-backed
// projects from the same settings, and refuse the same bad ones.
func TestEveryStoreCommandReadsTheTrackerSettings(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"stdio"}, {"projects", "list", "--tenant", "acme"}, {"projects", "create", "--tenant", "acme", "--id", "x", "--key", "X", "--name", "X"}} {
		t.Run(cmd[0]+"-"+cmd[len(cmd)-1], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			env := with(baseEnv("sqlite://"+filepath.Join(dir, "ticketd.db")), "TICKETD_TRACKER_CREDENTIALS", "steal=TICKETD_JWT_HS256_SECRET")
			args := append(append([]string{"ticketd"}, cmd...), "--data-dir", filepath.Join(dir, ".ticketd"))
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, getenv(env), strings.NewReader(""), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), "TICKETD_JWT_HS256_SECRET is one of ticketd's own settings") {
				t.Fatalf("%v: %v, want the tracker credential refused", cmd, err)
			}
		})
	}
}
