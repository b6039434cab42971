package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestServeAnswersHealthAndMCPWithMintedToken(t *testing.T) {
	t.Parallel()
	rawURL := dbtest.SQLiteURL(t)
	seedProject(t, rawURL, "acme")
	env := baseEnv(rawURL)
	s := startServe(t, env)

	res, err := http.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s, want 200", res.Status)
	}

	// The token command derives the audience from the same settings as
	// serve, so its tokens are accepted without naming the audience.
	tok := mintToken(t, env, "--tenant", "acme", "--subject", "alice", "--scope", "tickets:read tickets:write")
	session := connect(t, s.URL+"/mcp", tok)
	if ids := projectIDs(t, session); !slices.Equal(ids, []string{"support"}) {
		t.Fatalf("list_projects = %v, want [support]", ids)
	}
	_, out, err := createTicket(context.Background(), session, "Printer on fire")
	if err != nil {
		t.Fatalf("create_ticket: %v", err)
	}
	if out.Status != "succeeded" || out.Ticket.Key != "SUP-1" || out.Ticket.Reporter != "alice" {
		t.Fatalf("create_ticket = %+v, want succeeded SUP-1 reported by alice", out)
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("run after cancellation = %v, want nil", err)
	}
	if logs := s.Stderr.String(); strings.Contains(logs, tok) {
		t.Fatal("the log contains the bearer token")
	}
	// Without --dev and without a cursor secret, cursors die with the
	// process: the operator is told at start.
	if !strings.Contains(s.Stderr.String(), "TICKETD_CURSOR_SECRET is not set") {
		t.Errorf("no warning about the missing cursor secret:\n%s", s.Stderr)
	}
	// Nor approval states: replicas must share the key that signs them.
	if !strings.Contains(s.Stderr.String(), "TICKETD_APPROVAL_SECRET is not set") {
		t.Errorf("no warning about the missing approval secret:\n%s", s.Stderr)
	}
}

func TestServeRejectsRequestsWithoutToken(t *testing.T) {
	t.Parallel()
	s := startServe(t, baseEnv(dbtest.SQLiteURL(t)))
	res, err := http.Post(s.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("POST /mcp without a token: %s, WWW-Authenticate %q; want 401 with resource_metadata",
			res.Status, res.Header.Get("WWW-Authenticate"))
	}
}

// TestServeShutdownWithCallsInFlight cancels run's context, as SIGTERM does,
// while clients keep creating tickets. run must return nil, calls in flight
// must be answered, every call that got an answer must have its ticket, and
// for every call, answered or not, the ticket and its operation record must
// be both present or both absent. (A call can still fail with EOF when its
// request raced the server closing an idle keep-alive connection; that one
// was never handled, and the check shows it left nothing.)
func TestServeShutdownWithCallsInFlight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		dbURL func(testing.TB) string
	}{
		{"sqlite", dbtest.SQLiteURL},
		{"postgres", dbtest.PostgresURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rawURL := tc.dbURL(t)
			seedProject(t, rawURL, "acme")
			env := baseEnv(rawURL)
			s := startServe(t, env)
			tok := mintToken(t, env, "--tenant", "acme", "--subject", "alice")
			session := connect(t, s.URL+"/mcp", tok)

			var (
				mu        sync.Mutex
				attempted []string
				succeeded []string
				// finished counts calls started before the cancellation and
				// answered after it: the in-flight work a graceful shutdown
				// lets finish.
				finished  int
				cancelled = make(chan struct{})
				wg        sync.WaitGroup
			)
			isCancelled := func() bool {
				select {
				case <-cancelled:
					return true
				default:
					return false
				}
			}
			for range 8 {
				wg.Go(func() {
					for {
						before := isCancelled()
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						opID, _, err := createTicket(ctx, session, "Shutdown test")
						cancel()
						mu.Lock()
						attempted = append(attempted, opID)
						if err == nil {
							succeeded = append(succeeded, opID)
						}
						if err == nil && !before && isCancelled() {
							finished++
						}
						mu.Unlock()
						if err != nil {
							return // the server stopped accepting calls
						}
					}
				})
			}
			waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(succeeded) >= 5 })
			close(cancelled)
			if err := s.stop(t); err != nil {
				t.Fatalf("run after cancellation with calls in flight = %v, want nil", err)
			}
			wg.Wait()
			if finished == 0 {
				t.Fatalf("no call in flight at cancellation was answered (%d calls, %d answered)", len(attempted), len(succeeded))
			}
			assertTicketsMatchOperations(t, rawURL, "acme", attempted, succeeded)
		})
	}
}

// assertTicketsMatchOperations checks that each attempted operation has a
// ticket exactly when it has a succeeded operation record, and that every
// succeeded call has both.
func assertTicketsMatchOperations(tb testing.TB, rawURL, tenant string, attempted, succeeded []string) {
	tb.Helper()
	d, err := db.Open(context.Background(), rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer d.Close()
	for _, opID := range attempted {
		var nTickets, nOps int64
		if err := d.Gorm.Raw("SELECT count(*) FROM tickets WHERE tenant_id = ? AND operation_id = ?", tenant, opID).Scan(&nTickets).Error; err != nil {
			tb.Fatal(err)
		}
		if err := d.Gorm.Raw("SELECT count(*) FROM operations WHERE tenant_id = ? AND operation_id = ? AND status = 'succeeded'", tenant, opID).Scan(&nOps).Error; err != nil {
			tb.Fatal(err)
		}
		if nTickets != nOps || nTickets > 1 {
			tb.Errorf("operation %s: %d tickets, %d succeeded records; want both 0 or both 1", opID, nTickets, nOps)
		}
		if slices.Contains(succeeded, opID) && nTickets != 1 {
			tb.Errorf("operation %s was answered as succeeded but has %d tickets", opID, nTickets)
		}
	}
	var nOther int64
	if err := d.Gorm.Raw("SELECT count(*) FROM operations WHERE status <> 'succeeded'").Scan(&nOther).Error; err != nil {
		tb.Fatal(err)
	}
	if nOther != 0 {
		tb.Errorf("%d operation records are not succeeded after a graceful shutdown", nOther)
	}
}

var (
	// bannerToken is the agent's token: the banner's first credential,
	// bare on a line of its own.
	bannerToken = regexp.MustCompile(`(?m)^Agent token for MCP clients \(tenant demo, subject agent, scopes tickets:read tickets:write; expires (\S+)\):\n\n(\S+)\n`)
	// bannerSignIn is the person's console sign-in link.
	bannerSignIn = regexp.MustCompile(`(?m)^  (\S+)/console/signin#code=(\S+)$`)
	bannerMCP    = regexp.MustCompile(`(?m)^MCP endpoint:\s+(\S+)$`)
	// bannerBase is the export line the guides' commands read ($BASE).
	bannerBase = regexp.MustCompile(`(?m)^  export BASE=(\S+)$`)
)

// devBanner waits for the dev banner on stdout and returns its MCP URL, the
// agent's token and the person's sign-in code, checking that the token
// comes first, is shown once, lasts the default TTL and stays out of the VS
// Code file, and that the sign-in link carries no JWT.
func devBanner(tb testing.TB, s *serveProc) (mcpURL, token, signInCode string) {
	tb.Helper()
	waitFor(tb, func() bool { return strings.Contains(s.Stdout.String(), "Another agent token:") })
	out := s.Stdout.String()
	m, tm, sm := bannerMCP.FindStringSubmatch(out), bannerToken.FindStringSubmatch(out), bannerSignIn.FindStringSubmatch(out)
	if m == nil || tm == nil || sm == nil {
		tb.Fatalf("dev banner lacks the MCP URL, the agent's token or the person's sign-in link:\n%s", out)
	}
	mcpURL, token, signInCode = m[1], tm[2], sm[2]
	if mcpURL != s.URL+"/mcp" || sm[1] != s.URL {
		tb.Fatalf("banner MCP URL %s and console link on %s, want both on %s", mcpURL, sm[1], s.URL)
	}
	if b := bannerBase.FindStringSubmatch(out); b == nil || b[1] != s.URL {
		tb.Fatalf("dev banner exports BASE as %q, want %s:\n%s", b, s.URL, out)
	}
	if n := strings.Count(out, token); n != 1 {
		tb.Fatalf("dev banner shows the token %d times, want once:\n%s", n, out)
	}
	if strings.Index(out, token) > strings.Index(out, signInCode) {
		tb.Fatalf("dev banner shows the person's link before the agent's token:\n%s", out)
	}
	// A JWT is three base64url segments, its header starting eyJ.
	if strings.Contains(sm[0], "eyJ") || strings.Count(signInCode, ".") >= 2 || strings.Contains(sm[0], token) {
		tb.Fatalf("the console sign-in link %q carries a JWT", sm[0])
	}
	exp, err := time.Parse(time.RFC3339, tm[1])
	if err != nil || time.Until(exp) < defaultTokenTTL-time.Minute || time.Until(exp) > defaultTokenTTL {
		tb.Fatalf("dev banner says the token expires %q (%v), want %s from now", tm[1], err, defaultTokenTTL)
	}
	claude := `claude mcp add --transport http ticketd ` + mcpURL + ` --header "Authorization: Bearer $TOKEN"`
	if !strings.Contains(out, claude) {
		tb.Fatalf("dev banner lacks the line\n%s\nin:\n%s", claude, out)
	}
	vscode := `"Authorization": "Bearer ${input:` + vscodeTokenInput + `}"`
	if !strings.Contains(out, vscode) || !strings.Contains(out, `"password": true`) {
		tb.Fatalf("dev banner's VS Code snippet lacks the token prompt %s:\n%s", vscode, out)
	}
	return mcpURL, token, signInCode
}

func TestServeDevFromEmptyDirectory(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), ".ticketd")
	env := map[string]string{"TICKETD_ADDR": "127.0.0.1:0", "TICKETD_LOG_FORMAT": "json"}

	first := startServe(t, env, "--dev", "--data-dir", dataDir)
	mcpURL, firstToken, signInCode := devBanner(t, first)
	assertMode(t, dataDir, os.ModeDir|0o700)
	secretPath := filepath.Join(dataDir, devSecretFile)
	assertMode(t, secretPath, 0o600)
	secret, err := os.ReadFile(secretPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, devDatabaseFile)); err != nil {
		t.Fatalf("dev database: %v", err)
	}

	session := connect(t, mcpURL, firstToken)
	if ids := projectIDs(t, session); !slices.Equal(ids, []string{"support"}) {
		t.Fatalf("list_projects = %v, want the seeded [support]", ids)
	}
	_, created, err := createTicket(context.Background(), session, "Made in the first run")
	if err != nil {
		t.Fatalf("create_ticket: %v", err)
	}
	if created.Ticket.Key != "SUP-1" || created.Ticket.Reporter != devSubject {
		t.Fatalf("create_ticket = %+v, want SUP-1 reported by %s", created, devSubject)
	}
	if strings.Contains(first.Stderr.String(), firstToken) {
		t.Fatal("the log contains the dev token; it belongs on stdout only")
	}
	// The banner's console link signs its person in, once; /metrics
	// counted the create.
	personSignsInOnce(t, first.URL, signInCode, firstToken)
	if m := scrape(t, first.URL); !strings.Contains(m, `ticketd_operations_total{action="create_ticket",outcome="created"} 1`+"\n") {
		t.Fatalf("/metrics does not count the one created ticket:\n%s", m)
	}
	// A cursor issued now must still work after the restart: --dev keeps
	// the cursor key in the data directory, and warns about nothing.
	if _, _, err := createTicket(context.Background(), session, "Made in the first run too"); err != nil {
		t.Fatalf("create_ticket: %v", err)
	}
	var page struct {
		NextCursor string `json:"next_cursor"`
	}
	callTool(t, session, "list_tickets", map[string]any{"limit": 1}, &page)
	if page.NextCursor == "" {
		t.Fatal("list_tickets with limit 1 of 2 tickets gave no next_cursor")
	}
	if strings.Contains(first.Stderr.String(), "TICKETD_CURSOR_SECRET") {
		t.Errorf("--dev warned about the cursor secret:\n%s", first.Stderr)
	}
	if err := first.stop(t); err != nil {
		t.Fatalf("first run: %v", err)
	}

	second := startServe(t, env, "--dev", "--data-dir", dataDir)
	secondURL, _, _ := devBanner(t, second)
	again, err := os.ReadFile(secretPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(secret) {
		t.Fatal("the second start replaced the dev secret")
	}
	// The first run's token still works, and the first run's ticket and
	// the seed (not seeded twice) are still there.
	session = connect(t, secondURL, firstToken)
	if ids := projectIDs(t, session); !slices.Equal(ids, []string{"support"}) {
		t.Fatalf("list_projects after restart = %v, want [support]", ids)
	}
	if keys := ticketKeys(t, session); !slices.Equal(keys, []string{"SUP-2", "SUP-1"}) {
		t.Fatalf("list_tickets after restart = %v, want [SUP-2 SUP-1]", keys)
	}
	var rest struct {
		Tickets []struct{ Key string } `json:"tickets"`
	}
	callTool(t, session, "list_tickets", map[string]any{"limit": 1, "cursor": page.NextCursor}, &rest)
	if len(rest.Tickets) != 1 || rest.Tickets[0].Key != "SUP-1" {
		t.Fatalf("the first run's cursor after restart listed %+v, want SUP-1", rest.Tickets)
	}

	// The banner's "Another token" command, run as printed, mints a token
	// this server accepts (its audience follows the non-default address).
	line := anotherTokenLine.FindStringSubmatch(second.Stdout.String())
	if line == nil {
		t.Fatalf("no \"Another token\" line in:\n%s", second.Stdout.String())
	}
	args := strings.Fields(line[1])
	for i, a := range args {
		args[i] = strings.Trim(a, "'")
	}
	// run was called as "ticketd", so the banner names that program.
	if len(args) < 2 || args[0] != "ticketd" || args[1] != "token" {
		t.Fatalf("unexpected token command %q", line[1])
	}
	another := mintToken(t, nil, args[2:]...)
	if ids := projectIDs(t, connect(t, secondURL, another)); !slices.Equal(ids, []string{"support"}) {
		t.Fatalf("list_projects with the banner's token command = %v", ids)
	}
}

var anotherTokenLine = regexp.MustCompile(`Another agent token:\s+(.+)`)

func TestServeDevUsesGivenDatabase(t *testing.T) {
	t.Parallel()
	rawURL := dbtest.SQLiteURL(t)
	dataDir := filepath.Join(t.TempDir(), "dev")
	s := startServe(t, map[string]string{"TICKETD_ADDR": "127.0.0.1:0", "TICKETD_LOG_FORMAT": "json", "TICKETD_DATABASE_URL": rawURL},
		"--dev", "--data-dir", dataDir)
	mcpURL, tok, _ := devBanner(t, s)
	if _, err := os.Stat(filepath.Join(dataDir, devDatabaseFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dev mode created its own database although TICKETD_DATABASE_URL was set (stat: %v)", err)
	}
	session := connect(t, mcpURL, tok)
	if ids := projectIDs(t, session); !slices.Equal(ids, []string{"support"}) {
		t.Fatalf("list_projects = %v, want the seeded [support] in the given database", ids)
	}
}

func TestTokenWithDevVerifiesAgainstDevSecret(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), ".ticketd")
	env := map[string]string{}
	tok := mintToken(t, env, "--dev", "--data-dir", dataDir, "--tenant", "demo", "--subject", "bob", "--scope", "tickets:read", "--ttl", "5m")
	secret, _, err := devSecret(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := authn.NewVerifier(context.Background(), authn.Config{
		HS256Secret: secret, Issuer: devIssuer, Audience: "http://" + defaultAddr + "/mcp",
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if p.Tenant != "demo" || p.Subject != "bob" || !slices.Equal(p.Scopes, []string{"tickets:read"}) ||
		time.Until(p.Expires) > 5*time.Minute || time.Until(p.Expires) < 4*time.Minute {
		t.Fatalf("principal = %+v, want demo/bob, [tickets:read], expiring in 5m", p)
	}
}

func TestMigrateReportsSchemaVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		dbURL func(testing.TB) string
	}{
		{"sqlite", func(tb testing.TB) string { return "sqlite://" + filepath.Join(tb.TempDir(), "m.db") }},
		{"postgres", dbtest.PostgresURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"TICKETD_DATABASE_URL": tc.dbURL(t)}
			for range 2 { // the second run finds nothing to do
				var stdout strings.Builder
				if err := run(context.Background(), []string{"ticketd", "migrate"}, getenv(env), nil, &stdout, io.Discard); err != nil {
					t.Fatalf("migrate: %v", err)
				}
				if !regexp.MustCompile(`^schema version [1-9][0-9]*\n$`).MatchString(stdout.String()) {
					t.Fatalf("migrate printed %q, want \"schema version N\"", stdout.String())
				}
			}
		})
	}
}

func assertMode(tb testing.TB, path string, want os.FileMode) {
	tb.Helper()
	info, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	if got := info.Mode() & (os.ModeDir | os.ModePerm); got != want {
		tb.Fatalf("%s has mode %s, want %s", path, got, want)
	}
}

// waitFor polls cond for up to 30 seconds.
func waitFor(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// personSignsInOnce posts the banner's sign-in code to the console at
// base, as the link's script does: it opens a session of the dev person,
// who may open the approvals page (the agent's token, signed in, may not);
// the same code a second time is refused.
func personSignsInOnce(tb testing.TB, base, code, agentToken string) {
	tb.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(form url.Values) int {
		tb.Helper()
		resp, err := client.PostForm(base+consoleSignInPath, form)
		if err != nil {
			tb.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func(path string) int {
		tb.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			tb.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := post(url.Values{"code": {code}}); status != http.StatusSeeOther {
		tb.Fatalf("console sign-in with the banner's link = %d, want 303", status)
	}
	if status := get("/console/approvals"); status != http.StatusOK {
		tb.Fatalf("the banner's person opening the approvals page = %d, want 200", status)
	}
	if status := post(url.Values{"code": {code}}); status != http.StatusUnauthorized {
		tb.Fatalf("the banner's sign-in link used a second time = %d, want 401", status)
	}
	if status := post(url.Values{"token": {agentToken}}); status != http.StatusSeeOther {
		tb.Fatalf("console sign-in with the agent's token = %d, want 303", status)
	}
	if status := get("/console/approvals"); status != http.StatusForbidden {
		tb.Fatalf("the agent's token opening the approvals page = %d, want 403", status)
	}
}

// scrape returns the text of base's /metrics.
func scrape(tb testing.TB, base string) string {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /metrics = %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

func TestServeMetricsOnTheirOwnListener(t *testing.T) {
	t.Parallel()
	rawURL := dbtest.SQLiteURL(t)
	s := startServe(t, with(baseEnv(rawURL), "TICKETD_METRICS_ADDR", "127.0.0.1:0"))
	var metricsURL string
	sc := bufio.NewScanner(strings.NewReader(s.Stderr.String()))
	for sc.Scan() {
		var line struct{ Msg, URL string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving metrics" {
			metricsURL = line.URL
		}
	}
	if metricsURL == "" {
		t.Fatalf("no \"serving metrics\" log line:\n%s", s.Stderr)
	}
	if m := scrape(t, strings.TrimSuffix(metricsURL, "/metrics")); !strings.Contains(m, "ticketd_operations_total") || !strings.Contains(m, `go_sql_open_connections{db_name="ticketd"}`) {
		t.Fatalf("the metrics listener lacks the operation or pool metrics:\n%s", m)
	}
	res, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /metrics on the main listener = %d, want 404 when TICKETD_METRICS_ADDR is set", res.StatusCode)
	}
}
