// Package servertest runs the real ticketd HTTP stack for end-to-end tests:
// server.New over a real database, a real JWT verifier, and go-sdk MCP
// clients that authenticate with real HS256 tokens. Every Env is private to
// one test, so tests run in parallel.
package servertest

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracked"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// Issuer is the issuer every Env's verifier accepts.
const Issuer = "https://issuer.test"

// Secret signs the tokens every Env's verifier accepts (Verifier, Mint).
var Secret = []byte("servertest-secret-of-at-least-32-bytes!")

// CallTimeout bounds each MCP call a helper makes, so a hung server fails
// the test instead of stalling the run.
const CallTimeout = 30 * time.Second

// Env is one running ticketd HTTP server.
type Env struct {
	// URL is where the server listens, its PublicURL unless
	// Options.PublicURL named another; Endpoint is URL+"/mcp". Audience is
	// PublicURL+"/mcp", every token's audience.
	URL, Endpoint, Audience string
	DB                      *db.DB
	Service                 *tickets.Service
	// Secret signs tokens the verifier accepts (the package's Secret).
	Secret []byte
	// Metrics are the server's, served at URL+"/metrics"; Service reports
	// its writes to them.
	Metrics *observe.Metrics
	// Approvals is the approval gate when Options.Approval asked for one.
	Approvals *approval.Gate
}

// Options adjusts Start. The zero value is fine.
type Options struct {
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Ready replaces the readiness check, a ping of the database.
	Ready func(ctx context.Context) error
	// Edge configures the edge (allowed origins and hosts, tenant limits,
	// read-only); the zero value is the defaults.
	Edge server.Edge
	// Tracked connects tracker-backed projects (zero: none can be created).
	Tracked tracked.Options
	// AuthorizationServers is server.Config.AuthorizationServers.
	AuthorizationServers []string
	// PublicURL, when set, is the origin the server says it is at (so the
	// tokens' audience) instead of its listening address; list the address
	// in Edge.AllowedHosts for the server to answer requests made to it.
	PublicURL string
	// Service, when set, is served instead of the one Start builds; its
	// writes reach Metrics only if it was built to report them
	// (server.ObserveWrites), and Approval and Tracked do not apply to it.
	Service *tickets.Service
	// Webhooks serves the REST webhook routes; nil leaves them out.
	Webhooks *webhooks.Service
	// Approval, when set, gates the service's writes behind approvals
	// (docs/contract.md#approval); its PageURL defaults to the Env's console. Nil: nobody
	// is asked, as every test that is not about approval wants.
	Approval *approval.Options
}

// Start serves d (a fresh, migrated database, as dbtest gives) over
// httptest until the test ends.
func Start(tb testing.TB, d *db.DB, opts Options) *Env {
	tb.Helper()
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	metrics := observe.New(observe.Options{Actions: tickets.Actions(), ApprovalEvents: approval.Events(), ReconcileResults: tracked.ReconcileResults()})
	if opts.Tracked.OnReconcile == nil {
		opts.Tracked.OnReconcile = metrics.Reconciliation
	}
	svcOpts := tickets.Options{OnWrite: server.ObserveWrites(metrics), Tracked: opts.Tracked}
	var gate *approval.Gate
	if opts.Approval != nil {
		ao := *opts.Approval
		if ao.PageURL == nil {
			ao.PageURL = func(id string) string { return base + "/console/approvals/" + id }
		}
		if ao.OnEvent == nil {
			ao.OnEvent = metrics.Approval
		}
		gate = approval.New(d.Gorm, ao)
		svcOpts.Approvals = gate
	}
	public := cmp.Or(opts.PublicURL, base)
	e := &Env{
		URL: base, Endpoint: base + server.MCPPath, Audience: public + server.MCPPath, DB: d,
		Service:   opts.Service,
		Secret:    Secret,
		Metrics:   metrics,
		Approvals: gate,
	}
	if e.Service == nil {
		e.Service = tickets.NewService(d.Gorm, svcOpts)
	}
	ready := opts.Ready
	if ready == nil {
		ready = func(ctx context.Context) error {
			sqlDB, err := d.Gorm.DB()
			if err != nil {
				return err
			}
			return sqlDB.PingContext(ctx)
		}
	}
	h, err := server.New(server.Config{
		Service: e.Service, Verifier: Verifier(tb, e.Audience), PublicURL: public, Issuer: Issuer, Logger: opts.Logger,
		Ready: ready, Metrics: metrics, Edge: opts.Edge, AuthorizationServers: opts.AuthorizationServers,
		ConsoleSessions: console.NewSessions(d.Gorm), Webhooks: opts.Webhooks,
	})
	if err != nil {
		tb.Fatalf("servertest: server.New: %v", err)
	}
	ts.Config.Handler = h
	ts.Start()
	tb.Cleanup(ts.Close)
	return e
}

// Token mints a valid one-hour token for subject "agent" of tenant with
// scopes.
func (e *Env) Token(tb testing.TB, tenant string, scopes ...string) string {
	tb.Helper()
	return e.Mint(tb, authn.TokenRequest{
		Issuer: Issuer, Audience: e.Audience, Tenant: tenant, Subject: "agent", Scopes: scopes, TTL: time.Hour,
	}, time.Now())
}

// Mint signs req with the Env's secret as issued at now, for tokens that
// are deliberately wrong (expired, another audience or issuer).
func (e *Env) Mint(tb testing.TB, req authn.TokenRequest, now time.Time) string {
	tb.Helper()
	return Mint(tb, req, now)
}

// Mint signs req with Secret as issued at now: with Issuer and the
// verifier's audience, a token Verifier accepts.
func Mint(tb testing.TB, req authn.TokenRequest, now time.Time) string {
	tb.Helper()
	tok, err := authn.MintHS256(Secret, req, now)
	if err != nil {
		tb.Fatalf("servertest: mint token: %v", err)
	}
	return tok
}

// Verifier accepts the tokens Mint signs for Issuer and audience, for tests
// that serve one handler (the console, the REST router) without Start.
func Verifier(tb testing.TB, audience string) *authn.Verifier {
	tb.Helper()
	v, err := authn.NewVerifier(context.Background(), authn.Config{Issuer: Issuer, Audience: audience, HS256Secret: Secret})
	if err != nil {
		tb.Fatalf("servertest: verifier: %v", err)
	}
	return v
}

// Decide has person subject of tenant, holding tickets:approve alone,
// approve (or decline) approval id over REST, as a person does
// (docs/approval.md), and returns the status and body of the answer. It
// reports a failure to ask with Errorf, so any goroutine may call it.
func (e *Env) Decide(tb testing.TB, tenant, subject, id string, approve bool) (int, string) {
	tb.Helper()
	verb := "decline"
	if approve {
		verb = "approve"
	}
	tok := e.Mint(tb, authn.TokenRequest{
		Issuer: Issuer, Audience: e.Audience, Tenant: tenant, Subject: subject, Scopes: []string{authn.ScopeApprove}, TTL: time.Hour,
	}, time.Now())
	req, err := http.NewRequest(http.MethodPost, e.URL+"/api/v1/approvals/"+id+"/"+verb, nil)
	if err != nil {
		tb.Errorf("servertest: %s approval %s: %v", verb, id, err)
		return 0, ""
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Errorf("servertest: %s approval %s: %v", verb, id, err)
		return 0, ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Errorf("servertest: read the answer to %s approval %s: %v", verb, id, err)
	}
	return resp.StatusCode, string(body)
}

// Connect opens an MCP client session to the Env's endpoint as token.
func (e *Env) Connect(tb testing.TB, token string) *mcp.ClientSession {
	tb.Helper()
	return Connect(tb, e.Endpoint, token)
}

// SeedProject creates the project "support" (key SUP) for tenant.
func (e *Env) SeedProject(tb testing.TB, tenant string) {
	tb.Helper()
	ticketstest.SeedSupport(tb, e.Service, tenant)
}

// CountTickets returns how many tickets tenant has, read straight from the
// database so it does not depend on the code under test.
func (e *Env) CountTickets(tb testing.TB, tenant string) int64 {
	tb.Helper()
	return dbtest.CountRows(tb, e.DB, "tickets", tenant)
}

// CountOperations returns how many operation records tenant has.
func (e *Env) CountOperations(tb testing.TB, tenant string) int64 {
	tb.Helper()
	return dbtest.CountRows(tb, e.DB, "operations", tenant)
}

// Connect opens an MCP client session to endpoint with a bearer token,
// over Streamable HTTP without retries (a failed call must fail, not be
// re-sent behind the test's back). The session closes when the test ends.
func Connect(tb testing.TB, endpoint, token string) *mcp.ClientSession {
	tb.Helper()
	cs, err := Dial(endpoint, token)
	if err != nil {
		tb.Fatalf("servertest: connect to %s: %v", endpoint, err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Dial is Connect for callers that expect it to fail (a bad token). The
// caller closes the session.
func Dial(endpoint, token string) (*mcp.ClientSession, error) {
	return DialWith(endpoint, Bearer(token, http.DefaultTransport), "")
}

// ConnectWith is Connect with client options (an elicitation handler, say)
// and session options (an older protocol version).
func (e *Env) ConnectWith(tb testing.TB, token string, client *mcp.ClientOptions, session *mcp.ClientSessionOptions) *mcp.ClientSession {
	tb.Helper()
	var version string
	if session != nil {
		version = session.ProtocolVersion
	}
	cs, err := DialClient(e.Endpoint, Bearer(token, http.DefaultTransport), client, version)
	if err != nil {
		tb.Fatalf("servertest: connect to %s: %v", e.Endpoint, err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return cs
}

// DialWith is Dial over rt (which must add the token), asking for protocol
// version (the latest if empty; "2025-11-25" makes the legacy handshake).
func DialWith(endpoint string, rt http.RoundTripper, version string) (*mcp.ClientSession, error) {
	return DialClient(endpoint, rt, nil, version)
}

// DialClient is DialWith with client options (nil: the defaults).
func DialClient(endpoint string, rt http.RoundTripper, client *mcp.ClientOptions, version string) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "servertest", Version: "v0"}, client)
	return c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: rt},
		MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// Bearer returns a RoundTripper adding "Authorization: Bearer token" to
// every request.
func Bearer(token string, next http.RoundTripper) http.RoundTripper {
	return bearer{token: token, next: next}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// Call calls a tool and fails the test on a protocol-level error; tool
// errors come back as results with IsError set.
func Call(tb testing.TB, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	tb.Helper()
	res, err := TryCall(cs, tool, args)
	if err != nil {
		tb.Fatalf("call %s: %v", tool, err)
	}
	return res
}

// TryCall calls a tool with CallTimeout and returns the protocol error, for
// calls that are meant to fail at the transport.
func TryCall(cs *mcp.ClientSession, tool string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// Decode converts a result's structured content into T.
func Decode[T any](tb testing.TB, res *mcp.CallToolResult) T {
	tb.Helper()
	var out T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		tb.Fatalf("marshal structured content: %v", err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("decode structured content %s: %v", b, err)
	}
	return out
}

// ConnectInMemory opens a client session to s over in-memory transports, for
// tests of the MCP server without HTTP (no token: the principal, if any,
// comes from the server's own middleware). Both ends close when the test
// ends.
func ConnectInMemory(tb testing.TB, s *mcp.Server) *mcp.ClientSession {
	tb.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		tb.Fatalf("servertest: connect server in memory: %v", err)
	}
	tb.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "servertest", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		tb.Fatalf("servertest: connect client in memory: %v", err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return cs
}
