package server_test

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracked"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/github"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// dns is a Resolver whose answers a test sets; an unknown name does not
// resolve.
type dns struct {
	mu    sync.Mutex
	hosts map[string][]netip.Addr
}

func (d *dns) set(host string, addrs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hosts[host] = nil
	for _, a := range addrs {
		d.hosts[host] = append(d.hosts[host], netip.MustParseAddr(a))
	}
}

func (d *dns) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.hosts[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// addressClasses are the destinations the attack run registered (issue 28),
// each with the address a name of it resolves to, and whether
// TICKETD_TRACKER_ALLOW_PRIVATE admits the literal and such a name
// (2130706433 is refused as a literal, a legacy form of an address, but a
// name resolving to 127.0.0.1 is loopback like any other).
var addressClasses = []struct {
	host, resolves string
	private        bool // the literal
	namePrivate    bool // a name resolving to it
}{
	{"169.254.169.254", "169.254.169.254", false, false},
	{"[fd00:ec2::254]", "fd00:ec2::254", false, false},
	{"[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe", false, false},
	{"[::ffff:169.254.169.254]", "::ffff:169.254.169.254", false, false},
	{"localhost:5432", "127.0.0.1", true, true},
	{"[::1]", "::1", true, true},
	{"0.0.0.0", "0.0.0.0", false, false},
	{"10.0.0.1", "10.0.0.1", true, true},
	{"2130706433", "127.0.0.1", false, true},
	{"metadata.google.internal", "169.254.169.254", false, false},
}

type boundaryEnv struct {
	*trackerEnv
	dns   *dns
	store *db.DB
}

// startBoundary serves ticketd in production mode with the tracker policy
// an operator would set: credentials gh (any tenant) and beta (tenant
// "beta" only), the default host allow-list plus the test's hosts, and
// the resolver the test controls.
func startBoundary(t *testing.T, d *db.DB, allowPrivate bool, hosts ...string) *boundaryEnv {
	t.Helper()
	resolver := &dns{hosts: map[string][]netip.Addr{}}
	resolver.set("api.github.com", "140.82.112.5")
	creds := tracker.Credentials{{Name: "gh", Env: "GH_TOKEN"}, {Name: "beta", Env: "BETA_TOKEN", Tenants: []string{"beta"}}}
	guard := ssrf.Guard{AllowPrivate: allowPrivate, PlainPrivate: true, Hosts: append([]string{"api.github.com", "*.atlassian.net"}, hosts...), Resolver: resolver}
	getenv := func(name string) string {
		switch name {
		case "GH_TOKEN":
			return "ghp_operator"
		case "BETA_TOKEN":
			return "ghp_beta"
		}
		t.Errorf("ticketd read the variable %s", name)
		return ""
	}
	env := servertest.Start(t, d, servertest.Options{Tracked: tracked.Options{
		Open:        github.Opener(github.Options{Timeout: time.Second, Credentials: creds, Getenv: getenv, Guard: guard}),
		Credentials: creds, Guard: guard, Settle: time.Hour, Lease: 5 * time.Second,
	}})
	tenant := "t" + uuid.NewString()[:8]
	return &boundaryEnv{dns: resolver, store: d, trackerEnv: &trackerEnv{Env: env, tenant: tenant,
		admin: env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin),
		agent: env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite)}}
}

// project asks for a tracker-backed project with backend b and returns the
// answer's status and body. Its key is the ID upper-cased (up to the ten
// characters a key may have), so IDs drawn at random never share a key.
func (e *boundaryEnv) project(t *testing.T, id string, b map[string]any) (int, string) {
	t.Helper()
	key := strings.ToUpper(id[:min(len(id), 10)])
	resp, raw := e.rest(t, "POST", "/api/v1/projects", e.admin, "", map[string]any{"id": id, "key": key, "name": id, "backend": b}, 0, nil)
	return resp.StatusCode, raw
}

// TestTrackerCredentialsAreTheOperators: a project that names a variable
// (token_env), ticketd's own secret, an undeclared credential or another
// tenant's is refused, and the refusal names no other tenant's credential.
func TestTrackerCredentialsAreTheOperators(t *testing.T) {
	t.Parallel()
	e := startBoundary(t, dbtest.SQLite(t), false)
	for name, c := range map[string]struct {
		backend map[string]any
		field   string
	}{
		"TokenEnv":             {map[string]any{"kind": "github", "repository": "acme/widgets", "token_env": "TICKETD_JWT_HS256_SECRET"}, "backend.token_env"},
		"TokenEnvBesideOne":    {map[string]any{"kind": "github", "repository": "acme/widgets", "token_env": "GH_TOKEN", "credential": "gh"}, "backend.token_env"},
		"TicketdVariable":      {map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "TICKETD_JWT_HS256_SECRET"}, "backend.credential"},
		"Undeclared":           {map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "GH_TOKEN"}, "backend.credential"},
		"AnotherTenants":       {map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "beta"}, "backend.credential"},
		"NoCredential":         {map[string]any{"kind": "github", "repository": "acme/widgets"}, "backend.credential"},
		"PlainHTTP":            {map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "gh", "api_url": "http://api.github.com/"}, "backend.api_url"},
		"HostNotOnTheList":     {map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "gh", "api_url": "https://evil.example/"}, "backend.api_url"},
		"LoopbackListenerHTTP": {map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "gh", "api_url": "http://127.0.0.1:8080/"}, "backend.api_url"},
	} {
		status, raw := e.project(t, "p"+strings.ToLower(name), c.backend)
		if status != http.StatusBadRequest || !strings.Contains(raw, "invalid_input") || !strings.Contains(raw, `"field":"`+c.field+`"`) {
			t.Errorf("%s: %d %s; want invalid_input naming %s", name, status, raw, c.field)
		}
		if strings.Contains(raw, "beta") || strings.Contains(raw, "BETA_TOKEN") {
			t.Errorf("%s: %s names another tenant's credential", name, raw)
		}
		if c.field == "backend.token_env" && !strings.Contains(raw, "credential") {
			t.Errorf("%s: %s does not say to name a credential", name, raw)
		}
	}
	if status, raw := e.project(t, "good", map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "gh"}); status != http.StatusCreated {
		t.Fatalf("a project naming a declared credential: %d %s", status, raw)
	}
	if strings.Contains(mustJSON(t, e.projects(t)), "ghp_operator") {
		t.Error("a project list shows the token")
	}
}

func (e *boundaryEnv) projects(t *testing.T) any {
	t.Helper()
	var out any
	e.rest(t, "GET", "/api/v1/projects", e.admin, "", nil, http.StatusOK, &out)
	return out
}

// TestTrackerAddressClassesAreRefused: every address class of the attack
// run, as a literal and as a name resolving to it, is refused at
// registration, in one text; with allow-private only the private and
// loopback ones are admitted. A name that did not resolve at registration
// and then resolves to one of them is refused at dial time: the create
// sends nothing, and last_error says so in ticketd's words.
func TestTrackerAddressClassesAreRefused(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	var hosts []string
	for i, c := range addressClasses {
		hosts = append(hosts, strings.Trim(strings.Split(strings.TrimSuffix(c.host, ":5432"), "]:")[0], "[]"),
			name(i, "literal"), name(i, "rebind"))
	}
	strict := startBoundary(t, d, false, hosts...)
	private := startBoundary(t, d, true, hosts...)
	for _, e := range []*boundaryEnv{strict, private} {
		e.dns.set("localhost", "127.0.0.1")
		e.dns.set("metadata.google.internal", "169.254.169.254")
		for i, c := range addressClasses {
			e.dns.set(name(i, "literal"), c.resolves)
		}
	}
	for i, c := range addressClasses {
		for _, host := range []string{c.host, name(i, "literal")} {
			u := "https://" + host + "/"
			status, raw := strict.project(t, "s"+uuid.NewString()[:8], map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "gh", "api_url": u})
			if status != http.StatusBadRequest || !strings.Contains(raw, "destination refused: ticketd does not connect to") {
				t.Errorf("register %s: %d %s; want the one refusal", u, status, raw)
			}
			if host != c.host && strings.Contains(raw, c.resolves) {
				t.Errorf("register %s: %s says what the name resolves to", u, raw)
			}
			status, raw = private.project(t, "p"+uuid.NewString()[:8], map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "gh", "api_url": u})
			admitted := c.private
			if host != c.host {
				admitted = c.namePrivate
			}
			if (status == http.StatusCreated) != admitted {
				t.Errorf("register %s with allow-private: %d %s; want admitted=%v", u, status, raw, admitted)
			}
		}
	}

	// At dial time: registered while the name resolves nowhere, then it
	// resolves to the class's address.
	for i, c := range addressClasses {
		rebind := name(i, "rebind")
		id := "r" + uuid.NewString()[:8]
		if status, raw := strict.project(t, id, map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "gh", "api_url": "https://" + rebind + "/"}); status != http.StatusCreated {
			t.Fatalf("register %s before it resolves: %d %s; want it accepted, to be judged at dial", rebind, status, raw)
		}
		strict.dns.set(rebind, c.resolves)
		ds := strict.createUnsent(t, id)
		if ds.LastError != "create issue: tracker request not sent: destination refused" {
			t.Errorf("create through %s → %s: last_error %q; want the one refusal, naming nothing", rebind, c.resolves, ds.LastError)
		}
	}
}

func name(i int, kind string) string { return kind + "-" + string(rune('a'+i)) + ".tracker.test" }

// createUnsent creates a ticket in project and waits for its first round
// to record that nothing was sent; it returns the operation's downstream.
func (e *boundaryEnv) createUnsent(t *testing.T, project string) *contract.Downstream {
	t.Helper()
	key := uuid.NewString()
	e.rest(t, "POST", "/api/v1/tickets", e.agent, key, map[string]any{"project_id": project, "title": "Widget jams"}, 0, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st contract.OperationStatus
		e.rest(t, "GET", "/api/v1/operations/"+key, e.agent, "", nil, http.StatusOK, &st)
		if ds := st.Downstream; ds != nil && ds.LastError != "" {
			if ds.Attempts != 0 || st.Status == "succeeded" {
				t.Errorf("operation %+v %+v; want nothing sent", st, ds)
			}
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("no round recorded within 10s: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCreateSendsALoopbackListenerNothing: in production mode, however a
// tracker-backed project comes to point at a listener on 127.0.0.1 (a name
// that resolved nowhere at registration, a row stored before this policy
// with a token_env naming ticketd's own secret), a create sends that
// listener nothing at all: not a connection.
func TestCreateSendsALoopbackListenerNothing(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		trap := githubtest.NewTrap(t)
		_, port, _ := net.SplitHostPort(trap.Addr())
		e := startBoundary(t, d, false, "listener.tracker.test", "127.0.0.1")

		t.Run("Registered", func(t *testing.T) {
			for _, u := range []string{"http://127.0.0.1:" + port + "/", "https://127.0.0.1:" + port + "/"} {
				if status, raw := e.project(t, "x"+uuid.NewString()[:8], map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "gh", "api_url": u}); status != http.StatusBadRequest {
					t.Errorf("register %s: %d %s; want refused", u, status, raw)
				}
			}
		})
		t.Run("NameRebound", func(t *testing.T) {
			id := "n" + uuid.NewString()[:8]
			if status, raw := e.project(t, id, map[string]any{"kind": "github", "repository": "acme/widgets", "credential": "gh", "api_url": "https://listener.tracker.test:" + port + "/"}); status != http.StatusCreated {
				t.Fatalf("register: %d %s", status, raw)
			}
			e.dns.set("listener.tracker.test", "127.0.0.1")
			e.createUnsent(t, id)
		})
		t.Run("RetiredTokenEnv", func(t *testing.T) {
			id := "o" + uuid.NewString()[:8]
			err := d.Gorm.Exec(`INSERT INTO projects (tenant_id, id, key, name, created_at, backend_kind, backend_repository, backend_api_url, backend_token_env_retired)
				VALUES (?, ?, 'OLD', 'Old', ?, 'github', 'acme/widgets', ?, 'TICKETD_JWT_HS256_SECRET')`, e.tenant, id, time.Now().UTC(), "http://127.0.0.1:"+port+"/").Error
			if err != nil {
				t.Fatal(err)
			}
			svc := tickets.NewService(d.Gorm, tickets.Options{Tracked: tracked.Options{Credentials: tracker.Credentials{{Name: "gh", Env: "GH_TOKEN"}}}})
			unmapped, err := svc.MapRetiredTokenEnvs(context.Background())
			if err != nil || !strings.Contains(strings.Join(unmapped, "\n"), "project "+id+" of tenant "+e.tenant) {
				t.Fatalf("map retired token_env: %v, notes %q; want a note for %s", err, unmapped, id)
			}
			_, raw := e.rest(t, "POST", "/api/v1/tickets", e.agent, uuid.NewString(), map[string]any{"project_id": id, "title": "Widget jams"}, http.StatusBadRequest, nil)
			if !strings.Contains(raw, "needs a credential") {
				t.Errorf("create in the unmapped project: %s; want it to say the project needs a credential", raw)
			}
		})
		if n := trap.Accepted(); n != 0 {
			t.Errorf("the loopback listener accepted %d connections; want none", n)
		}
	})
}

// TestTrackerErrorTextIsNotEchoed: what a tracker says in a refusal is
// not copied into downstream.last_error, where the tenant reads it; the
// operation records ticketd's own classification (a 401 refusal).
func TestTrackerErrorTextIsNotEchoed(t *testing.T) {
	t.Parallel()
	gh := githubtest.New("ghp_right")
	apiURL := githubtest.Start(t, gh)
	tracked := githubtest.Tracked("ghp_wrong", time.Second)
	tracked.Settle, tracked.Lease = time.Hour, 5*time.Second
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Tracked: tracked})
	tenant := "t" + uuid.NewString()[:8]
	e := &trackerEnv{Env: env, gh: gh, tenant: tenant,
		admin: env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin),
		agent: env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite)}
	e.rest(t, "POST", "/api/v1/projects", e.admin, "", map[string]any{"id": "widgets", "key": "WID", "name": "Widgets",
		"backend": map[string]any{"kind": "github", "repository": trackerRepo, "api_url": apiURL, "credential": githubtest.Credential}}, http.StatusCreated, nil)
	key := uuid.NewString()
	e.rest(t, "POST", "/api/v1/tickets", e.agent, key, map[string]any{"project_id": "widgets", "title": "Widget jams"}, 0, nil)
	var st contract.OperationStatus
	e.rest(t, "GET", "/api/v1/operations/"+key, e.agent, "", nil, http.StatusOK, &st)
	if st.Status != "failed" || st.Downstream == nil || st.Downstream.LastError != "create issue: tracker rejected the request: the tracker answered 401" {
		t.Fatalf("operation = %+v %+v; want failed with ticketd's classification of the 401", st, st.Downstream)
	}
	if raw := mustJSON(t, st); strings.Contains(raw, "Bad credentials") {
		t.Errorf("the operation shows the tracker's own text: %s", raw)
	}
}

// TestExternalURLIsTicketds: a tracker answering a javascript: html_url
// does not get it into the ticket; the external_url REST answers is the
// one ticketd builds from the API URL and the repository.
func TestExternalURLIsTicketds(t *testing.T) {
	t.Parallel()
	e := startTracker(t, dbtest.SQLite(t))
	e.gh.AnswerHTMLURL("javascript:alert(document.cookie)")
	var tk contract.Ticket
	e.rest(t, "POST", "/api/v1/tickets", e.agent, uuid.NewString(), map[string]any{"project_id": "widgets", "title": "Widget jams"}, http.StatusCreated, &tk)
	if !strings.HasPrefix(tk.ExternalURL, "https://127.0.0.1:") || !strings.HasSuffix(tk.ExternalURL, "/"+trackerRepo+"/issues/1") {
		t.Errorf("external_url = %q, want https://<the fake's host>/%s/issues/1", tk.ExternalURL, trackerRepo)
	}
}
