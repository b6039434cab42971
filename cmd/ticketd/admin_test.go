package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

// dialectURLs runs f once per engine with a fresh, migrated database URL.
func dialectURLs(t *testing.T, f func(t *testing.T, rawURL string)) {
	t.Helper()
	for name, mk := range map[string]func(testing.TB) string{"sqlite": dbtest.SQLiteURL, "postgres": dbtest.PostgresURL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, mk(t))
		})
	}
}

// runCmd runs `ticketd args…` with env and returns stdout, stderr and the error.
func runCmd(env map[string]string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(context.Background(), append([]string{"ticketd"}, args...), getenv(env), strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestProjectsCreateAndList(t *testing.T) {
	t.Parallel()
	dialectURLs(t, func(t *testing.T, rawURL string) {
		env := map[string]string{"TICKETD_DATABASE_URL": rawURL}

		out, hint, err := runCmd(env, "projects", "list", "--tenant", "acme")
		if err != nil || out != "" || !strings.Contains(hint, "ticketd projects create --tenant acme --id support --key SUP --name Support") {
			t.Fatalf("list of a new tenant = %q, %q, %v; want nothing on stdout and the create command on stderr", out, hint, err)
		}
		out, _, err = runCmd(env, "projects", "create", "--tenant", "acme", "--id", "support", "--key", "sup", "--name", " Support desk ")
		if err != nil || !strings.Contains(out, `created project support (key SUP, "Support desk") for tenant acme`) {
			t.Fatalf("create = %q, %v", out, err)
		}
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"Duplicate", []string{"--tenant", "acme", "--id", "support", "--key", "HELP", "--name", "Help"}, "already exists"},
			{"BadKey", []string{"--tenant", "acme", "--id", "ops", "--key", "1X", "--name", "Ops"}, "key: must be"},
			{"BadTenant", []string{"--tenant", "a b", "--id", "ops", "--key", "OPS", "--name", "Ops"}, `--tenant "a b" must be`},
			{"MissingName", []string{"--tenant", "acme", "--id", "ops", "--key", "OPS"}, "--name is required"},
		} {
			out, _, err := runCmd(env, append([]string{"projects", "create"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
				t.Errorf("create %s = %q, %v; want an error containing %q", tc.name, out, err, tc.want)
			}
		}
		out, _, err = runCmd(env, "projects", "list", "--tenant", "acme")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err != nil || len(lines) != 2 || !regexp.MustCompile(`^support\s+SUP\s+Support desk\s+\d{4}-\d\d-\d\dT`).MatchString(lines[1]) {
			t.Fatalf("list = %q, %v; want a header and support only: the failed creates made nothing", out, err)
		}
		if out, _, err := runCmd(env, "projects", "list", "--tenant", "globex"); err != nil || out != "" {
			t.Fatalf("another tenant's list = %q, %v; want empty", out, err)
		}
	})
}

func TestProjectsCommandErrors(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TICKETD_DATABASE_URL": "sqlite://" + filepath.Join(t.TempDir(), "p.db")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"projects"}, "want a subcommand"},
		{[]string{"projects", "delete"}, `unknown subcommand "delete"`},
		{[]string{"projects", "list"}, "--tenant is required"},
		{[]string{"projects", "list", "--tenant", "x", "extra"}, `unexpected argument "extra"`},
	} {
		if _, _, err := runCmd(env, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestNewTenantFirstRun follows docs/agents.md's path for a new tenant: create
// its project from the command line against a database no server has
// touched, then its agent connects and files a ticket.
func TestNewTenantFirstRun(t *testing.T) {
	t.Parallel()
	rawURL := "sqlite://" + filepath.Join(t.TempDir(), "fresh.db")
	env := baseEnv(rawURL)
	if _, _, err := runCmd(env, "projects", "create", "--tenant", "acme", "--id", "support", "--key", "SUP", "--name", "Support"); err != nil {
		t.Fatalf("projects create on a fresh database: %v", err)
	}
	s := startServe(t, env)
	tok := mintToken(t, env, "--tenant", "acme", "--subject", "agent")
	session := connect(t, s.URL+"/mcp", tok)
	if ids := projectIDs(t, session); !slices.Equal(ids, []string{"support"}) {
		t.Fatalf("list_projects = %v, want [support]", ids)
	}
	if _, created, err := createTicket(context.Background(), session, "First"); err != nil || created.Ticket.Key != "SUP-1" {
		t.Fatalf("create_ticket = %+v, %v", created, err)
	}
}

func TestTokenDefaultsToLongTTLAndSaysWhenItExpires(t *testing.T) {
	t.Parallel()
	env := baseEnv("")
	out, stderr, err := runCmd(env, "token", "--tenant", "acme", "--subject", "agent")
	if err != nil {
		t.Fatal(err)
	}
	v, err := authn.NewVerifier(context.Background(), authn.Config{
		HS256Secret: []byte(testSecret), Issuer: env["TICKETD_JWT_ISSUER"], Audience: "http://127.0.0.1:0/mcp",
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(context.Background(), strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if left := time.Until(p.Expires); left < defaultTokenTTL-time.Minute || left > defaultTokenTTL {
		t.Fatalf("token expires in %s, want %s", left, defaultTokenTTL)
	}
	want := "expires " + p.Expires.UTC().Format(time.RFC3339) + " (in 30 days)"
	if !strings.Contains(stderr, want) || strings.Contains(stderr, strings.TrimSpace(out)) {
		t.Fatalf("stderr %q, want %q and never the token", stderr, want)
	}
}

func TestDevTokenPointsNewTenantToProjectsCreate(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "dev")
	env := map[string]string{}
	hint := "projects create --dev --data-dir " + dataDir + " --tenant acme"
	// Before anything ran there is no database to ask, and none is made.
	_, stderr, err := runCmd(env, "token", "--dev", "--data-dir", dataDir, "--tenant", "acme", "--subject", "s")
	if err != nil || strings.Contains(stderr, "no project") {
		t.Fatalf("token before any database = %q, %v; want no project advice", stderr, err)
	}
	if out, _, err := runCmd(env, "migrate", "--dev", "--data-dir", dataDir); err != nil {
		t.Fatalf("migrate = %q, %v", out, err)
	}
	_, stderr, err = runCmd(env, "token", "--dev", "--data-dir", dataDir, "--tenant", "acme", "--subject", "s")
	if err != nil || !strings.Contains(stderr, "tenant acme has no project yet") || !strings.Contains(stderr, hint) {
		t.Fatalf("token for a tenant without projects: stderr %q, %v; want advice containing %q", stderr, err, hint)
	}
	if _, _, err := runCmd(env, "projects", "create", "--dev", "--data-dir", dataDir, "--tenant", "acme", "--id", "support", "--key", "SUP", "--name", "Support"); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = runCmd(env, "token", "--dev", "--data-dir", dataDir, "--tenant", "acme", "--subject", "s")
	if err != nil || strings.Contains(stderr, "no project") {
		t.Fatalf("token for a tenant with a project: stderr %q, %v; want no advice", stderr, err)
	}
}

func TestSelfCommand(t *testing.T) {
	t.Parallel()
	for arg0, want := range map[string]string{
		"/tmp/go-build3861384994/b001/exe/ticketd":      "go run ./cmd/ticketd",
		"/var/folders/x/T/go-build123/b001/exe/ticketd": "go run ./cmd/ticketd",
		"/root/.cache/go-build/00/006c1034-d/ticketd":   "go run ./cmd/ticketd",
		"bin/ticketd":           "bin/ticketd",
		"ticketd":               "ticketd",
		"/opt/my tools/ticketd": "'/opt/my tools/ticketd'",
		"/home/me/exe/ticketd":  "/home/me/exe/ticketd",
		filepath.Join("/home", "go-build", "ticketd", "bin", "tool"): "/home/go-build/ticketd/bin/tool",
	} {
		if got := selfCommand(arg0); got != want {
			t.Errorf("selfCommand(%q) = %q, want %q", arg0, got, want)
		}
	}
}

// insertOperation writes an operation record as the ledger would have left
// it at updated.
func insertOperation(tb testing.TB, rawURL string, status string, updated time.Time) {
	tb.Helper()
	d, err := db.Open(context.Background(), rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer d.Close()
	if err := d.Gorm.Exec(`INSERT INTO operations (tenant_id, action, operation_id, fingerprint, status, result_id, created_at, updated_at)
		VALUES ('acme', 'create_ticket', ?, ?, ?, 'r', ?, ?)`, uuid.NewString(), strings.Repeat("a", 64), status, updated.UTC(), updated.UTC()).Error; err != nil {
		tb.Fatal(err)
	}
}

// insertApproval adds an approval of tenant acme in status, expiring at expires.
func insertApproval(tb testing.TB, rawURL, status string, expires time.Time) {
	tb.Helper()
	d, err := db.Open(context.Background(), rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer d.Close()
	decided := map[bool]any{true: "alice", false: nil}[status != "pending"]
	var at any
	if decided != nil {
		at = expires.UTC()
	}
	if err := d.Gorm.Exec(`INSERT INTO approvals (approval_id, tenant_id, action, operation_id, fingerprint, requested_by, proposal,
		status, decided_by, decided_at, created_at, expires_at) VALUES (?, 'acme', 'create_ticket', ?, 'f', 'alice', '{}', ?, ?, ?, ?, ?)`,
		uuid.NewString(), uuid.NewString(), status, decided, at, expires.Add(-time.Hour).UTC(), expires.UTC()).Error; err != nil {
		tb.Fatal(err)
	}
}

func countOperations(tb testing.TB, rawURL string) int64 {
	tb.Helper()
	return countRows(tb, rawURL, "operations")
}

// countRows counts the rows of table, every tenant's.
func countRows(tb testing.TB, rawURL, table string) int64 {
	tb.Helper()
	d, err := db.Open(context.Background(), rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer d.Close()
	var n int64
	if err := d.Gorm.Table(table).Count(&n).Error; err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestPruneCommand(t *testing.T) {
	t.Parallel()
	dialectURLs(t, func(t *testing.T, rawURL string) {
		env := map[string]string{"TICKETD_DATABASE_URL": rawURL}
		old := time.Now().Add(-31 * 24 * time.Hour)
		for range 3 {
			insertOperation(t, rawURL, "succeeded", old)
		}
		for _, s := range []string{"pending", "failed", "unknown"} {
			insertOperation(t, rawURL, s, old)
		}
		insertOperation(t, rawURL, "succeeded", time.Now().Add(-29*24*time.Hour))
		insertApproval(t, rawURL, "pending", time.Now().Add(-time.Minute))
		insertApproval(t, rawURL, "approved", time.Now().Add(-time.Minute))
		insertApproval(t, rawURL, "pending", time.Now().Add(time.Minute))

		out, _, err := runCmd(env, "prune", "--dry-run")
		if err != nil || !strings.HasPrefix(out, "would delete 3 succeeded operation records last updated before ") {
			t.Fatalf("prune --dry-run = %q, %v", out, err)
		}
		if n, stones := countOperations(t, rawURL), countRows(t, rawURL, "operation_tombstones"); n != 7 || stones != 0 {
			t.Fatalf("the dry run left %d records and wrote %d tombstones, want all 7 and none", n, stones)
		}
		out, stderr, err := runCmd(env, "prune", "--batch-size", "2")
		if err != nil || !regexp.MustCompile(`^deleted 3 succeeded operation records last updated before \S+Z in 2 batches, keeping a tombstone of each\nexpired 2 approvals past their expiry\n$`).MatchString(out) || stderr != "" {
			t.Fatalf("prune = %q, %q, %v; want 3 deleted in 2 batches, 2 approvals expired, no warning", out, stderr, err)
		}
		if n, stones := countOperations(t, rawURL), countRows(t, rawURL, "operation_tombstones"); n != 4 || stones != 3 {
			t.Fatalf("prune left %d records and %d tombstones, want the 4 that are young or not succeeded and one tombstone per deleted record", n, stones)
		}
		// A shorter window works but says what it costs.
		out, stderr, err = runCmd(env, "prune", "--older-than", "1h")
		if err != nil || !strings.HasPrefix(out, "deleted 1 ") || !strings.Contains(stderr, "shorter than the 30 days retention") || !strings.Contains(stderr, "never applied twice") {
			t.Fatalf("prune --older-than 1h = %q, %q, %v", out, stderr, err)
		}
		if n := countOperations(t, rawURL); n != 3 {
			t.Fatalf("prune --older-than 1h left %d records, want the 3 that are not succeeded", n)
		}
	})
}

func TestPruneCommandErrors(t *testing.T) {
	t.Parallel()
	rawURL := dbtest.SQLiteURL(t)
	insertOperation(t, rawURL, "succeeded", time.Now().Add(-365*24*time.Hour))
	env := map[string]string{"TICKETD_DATABASE_URL": rawURL}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"prune", "--older-than", "0s"}, "--older-than must be positive"},
		{[]string{"prune", "--older-than", "-5h"}, "--older-than must be positive"},
		{[]string{"prune", "--older-than", "30d"}, "invalid value"},
		{[]string{"prune", "--batch-size", "0"}, "--batch-size must be positive"},
		{[]string{"prune", "--database-url", "mysql://x"}, "TICKETD_DATABASE_URL"},
	} {
		if out, _, err := runCmd(env, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
			t.Errorf("%v = %q, %v; want an error containing %q", tc.args, out, err, tc.want)
		}
	}
	if n := countOperations(t, rawURL); n != 1 {
		t.Fatalf("refused prunes deleted records: %d left, want 1", n)
	}
}
