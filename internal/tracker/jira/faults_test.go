package jira_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
	"github.com/ticketd/ticketd/internal/tracker/jira"
	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

// mayHaveActed reports whether err leaves the outcome open: not "not
// sent", not a rate limit, not a definite refusal.
func mayHaveActed(err error) bool {
	var limited *tracker.RateLimitError
	return err != nil && !errors.Is(err, tracker.ErrRejected) && !errors.Is(err, tracker.ErrNotSent) && !errors.As(err, &limited)
}

// TestAnswersAreClassified pins what each answer proves, which is what the
// reconciliation decides with: only a definite refusal is a clean failure,
// only a request that never left or a rate limit is "nothing happened",
// and everything else may have created the issue.
func TestAnswersAreClassified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := jiratest.New("bot@acme.example", "tok")
	site := jiratest.Start(t, s)
	s.SlowDelay = 3 * time.Second // past the timeout
	opts := options("bot@acme.example:tok")
	opts.Timeout = time.Second
	opts.BreakerFailures = 100 // every fault here reaches the fake: none is kept back
	p, err := jira.Open(config(site), opts)
	if err != nil {
		t.Fatal(err)
	}
	in := jira.NewIssue{Tenant: "acme", OperationID: "op-1", Title: "Widget jams"}

	if _, err := open(t, site, "bot@acme.example:wrong").CreateIssue(ctx, in); !errors.Is(err, tracker.ErrRejected) {
		t.Errorf("wrong credential (401): %v; want ErrRejected", err)
	}
	for _, f := range []jiratest.Fault{jiratest.Unauthorized, jiratest.Forbidden} {
		s.FailCreates(f)
		if _, err := p.CreateIssue(ctx, in); !errors.Is(err, tracker.ErrRejected) || !strings.Contains(err.Error(), "the tracker answered 40") {
			t.Errorf("fault %d: %v; want ErrRejected in ticketd's words", f, err)
		}
	}
	s.FailCreates(jiratest.TooManyRequests)
	var limited *tracker.RateLimitError
	if _, err := p.CreateIssue(ctx, in); !errors.As(err, &limited) || limited.RetryAfter != time.Second {
		t.Errorf("429: %v; want a rate limit with Retry-After 1s", err)
	}
	if n := len(s.Issues("OPS")); n != 0 {
		t.Fatalf("refused creates filed %d issues", n)
	}
	for _, f := range []jiratest.Fault{jiratest.DropAfterCreate, jiratest.BadGatewayAfterCreate, jiratest.SlowCreate, jiratest.HangAfterCreate} {
		s.FailCreates(f)
		if _, err := p.CreateIssue(ctx, in); !mayHaveActed(err) {
			t.Errorf("fault %d: %v; want an error that leaves the outcome open", f, err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); len(s.Issues("OPS")) < 4 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // the slow create lands
	}
	if n := len(s.Issues("OPS")); n != 4 {
		t.Errorf("the faults that act filed %d issues, want 4", n)
	}
	s.FailComments(jiratest.DropAfterCreate)
	if _, err := p.CreateComment(ctx, "OPS-1", "x"); !mayHaveActed(err) {
		t.Errorf("dropped comment: %v; want the outcome open", err)
	}
	s.FailTransitions(jiratest.BadGatewayAfterCreate)
	if err := p.SetStatus(ctx, "OPS-1", "closed"); !mayHaveActed(err) {
		t.Errorf("transition answered 502: %v; want the outcome open", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	_ = ln.Close()
	if _, err := open(t, closed, "x@y.example:tok").CreateIssue(ctx, in); !errors.Is(err, tracker.ErrNotSent) {
		t.Errorf("nobody listening: %v; want ErrNotSent", err)
	}
	if _, err := jira.Open(config(site), options("")); !errors.Is(err, tracker.ErrMisconfigured) {
		t.Errorf("empty credential variable: %v; want ErrMisconfigured", err)
	}
}

// TestCredentialIsBasicOrBearer: email:api_token goes as Basic auth,
// anything else (a Data Center PAT) as a Bearer token.
func TestCredentialIsBasicOrBearer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := jiratest.New("bot@acme.example", "tok")
	s.PAT = "NjE2NDk2MzQ2OTYzOmRhdGFjZW50ZXI"
	site := jiratest.Start(t, s)
	in := jira.NewIssue{Tenant: "acme", OperationID: "op-1", Title: "Widget jams"}
	for secret, ok := range map[string]bool{"bot@acme.example:tok": true, s.PAT: true, "tok": false, "bot@acme.example:" + s.PAT: false} {
		_, err := open(t, site, secret).CreateIssue(ctx, in)
		if ok && err != nil || !ok && !errors.Is(err, tracker.ErrRejected) {
			t.Errorf("credential %q: %v; want accepted %v", secret, err, ok)
		}
	}
}

// TestPrivateSiteIsRefusedOutsideDev: without AllowPrivate (production,
// no --dev) a site on loopback is refused when opened, and one named by a
// name that resolves there is refused at dial, before any connection.
func TestPrivateSiteIsRefusedOutsideDev(t *testing.T) {
	t.Parallel()
	trap := githubtest.NewTrap(t)
	opts := options("bot@acme.example:tok")
	opts.Guard = ssrf.Guard{}
	if _, err := jira.Open(config("https://"+trap.Addr()), opts); !errors.Is(err, tracker.ErrMisconfigured) || !errors.Is(err, ssrf.ErrRefused) {
		t.Errorf("open of a loopback site: %v; want ErrMisconfigured, refused", err)
	}
	_, port, _ := net.SplitHostPort(trap.Addr())
	opts.Guard = ssrf.Guard{Resolver: fixed{}}
	p, err := jira.Open(config("https://acme.atlassian.net:"+port), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.GetIssue(context.Background(), "OPS-1")
	if !errors.Is(err, tracker.ErrNotSent) || !strings.Contains(err.Error(), "destination refused") {
		t.Errorf("a name resolving to loopback: %v; want not sent, destination refused", err)
	}
	if n := trap.Accepted(); n != 0 {
		t.Errorf("the trap accepted %d connections; want none", n)
	}
}

// fixed resolves every name to loopback: DNS rebinding, as a test sees it.
type fixed struct{}

func (fixed) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestRedirectIsNotFollowed: a site that answers with a redirect to
// another host does not get ticketd to send the request there, so the
// credential never reaches it.
func TestRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	var leaked sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		leaked.Store(r.Header.Get("Authorization"), true)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"10001","key":"OPS-1"}`))
	}))
	t.Cleanup(other.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	p := open(t, redirecting.URL, "PAT-secret")
	_, err := p.CreateIssue(context.Background(), jira.NewIssue{Tenant: "acme", OperationID: "op-1", Title: "Widget jams"})
	if !mayHaveActed(err) || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("create answered by a redirect = %v; want an error that leaves the outcome open", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other host got %d requests; want none", n)
	}
	if _, ok := leaked.Load("Bearer PAT-secret"); ok {
		t.Error("the credential reached the other host")
	}
}

// TestAnswersAreBounded: a site cannot make ticketd hold an answer larger
// than its bound, in the body or in the headers.
func TestAnswersAreBounded(t *testing.T) {
	t.Parallel()
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/OPS-2") {
			w.Header().Set("X-Padding", strings.Repeat("a", 128<<10))
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"id":"1","key":"OPS-1","fields":{"summary":"`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for range 256 { // 16 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}}`))
	}))
	t.Cleanup(huge.Close)
	opts := options("PAT")
	opts.MaxAnswer, opts.Timeout = 1<<20, 10*time.Second
	p, err := jira.Open(config(huge.URL), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.GetIssue(context.Background(), "OPS-1"); err == nil || !strings.Contains(err.Error(), "larger than ticketd reads") {
		t.Errorf("get of a 16 MiB answer = %v; want it refused as too large", err)
	}
	if _, err := p.GetIssue(context.Background(), "OPS-2"); err == nil {
		t.Error("get of an answer with 128 KiB of headers succeeded")
	}
}

// TestBackendIsChecked: a backend opens only with a declared credential
// of its tenant, a site root and a Jira project key; its maps name only
// ticketd's statuses and priorities, and what they leave out takes §22's
// defaults.
func TestBackendIsChecked(t *testing.T) {
	t.Parallel()
	opts := options("PAT")
	for name, c := range map[string]jira.Config{
		"undeclared credential": {Site: "https://acme.atlassian.net", ProjectKey: "OPS", Credential: "other", Tenant: "acme"},
		"a path on the site":    {Site: "https://acme.atlassian.net/jira", ProjectKey: "OPS", Credential: "jira", Tenant: "acme"},
		"a lower-case key":      {Site: "https://acme.atlassian.net", ProjectKey: "ops", Credential: "jira", Tenant: "acme"},
		"an unknown status":     {Site: "https://acme.atlassian.net", ProjectKey: "OPS", Credential: "jira", Tenant: "acme", StatusMap: map[string]string{"blocked": "Blocked"}},
		"a priority to nothing": {Site: "https://acme.atlassian.net", ProjectKey: "OPS", Credential: "jira", Tenant: "acme", PriorityMap: map[string]string{"low": " "}},
		"plain http":            {Site: "http://acme.atlassian.net", ProjectKey: "OPS", Credential: "jira", Tenant: "acme"},
	} {
		if name == "plain http" {
			opts.Guard = ssrf.Guard{}
		}
		if _, err := jira.Open(c, opts); !errors.Is(err, tracker.ErrMisconfigured) {
			t.Errorf("%s: %v; want ErrMisconfigured", name, err)
		}
	}
	p, err := jira.Open(jira.Config{Site: "https://acme.atlassian.net/", ProjectKey: "OPS", Credential: "jira", Tenant: "acme",
		StatusMap: map[string]string{"closed": "Closed"}}, options("PAT"))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config()
	if c.IssueType != "Task" || c.StatusMap["closed"] != "Closed" || c.StatusMap["open"] != "To Do" || c.PriorityMap["urgent"] != "Highest" {
		t.Errorf("config = %+v; want the given closed status and §22's defaults elsewhere", c)
	}
	if s, ok := c.TicketStatus("done"); !ok || s != "resolved" {
		t.Errorf("TicketStatus(done) = %q, %v; want resolved", s, ok)
	}
}

// TestIssueKeysAreChecked: a key that is not a Jira key never reaches a
// path, whether a caller gives it or a tracker answers it.
func TestIssueKeysAreChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var paths sync.Map
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths.Store(r.URL.Path, true)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"10001","key":".."}`))
	}))
	t.Cleanup(site.Close)
	p := open(t, site.URL, "PAT")
	for _, key := range []string{"..", "OPS-1/../../myself", "ops-1", "OPS-01", ""} {
		if _, err := p.GetIssue(ctx, key); !errors.Is(err, jira.ErrInvalid) || !errors.Is(err, tracker.ErrNotSent) {
			t.Errorf("get of %q: %v; want it refused unsent", key, err)
		}
	}
	if _, err := p.CreateIssue(ctx, jira.NewIssue{Tenant: "acme", OperationID: "op-1", Title: "x"}); !mayHaveActed(err) {
		t.Errorf("a create answered with key \"..\": %v; want the outcome open", err)
	}
	paths.Range(func(k, _ any) bool {
		if k != "/rest/api/3/issue" {
			t.Errorf("a request reached %v", k)
		}
		return true
	})
}
