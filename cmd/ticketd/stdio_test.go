package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/logtest"
)

// TestStdio runs the real binary as an MCP client would launch it: built
// once here, started by the go-sdk CommandTransport, configured only
// through its environment.
func TestStdio(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "ticketd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const issuer = "https://issuer.test"
	audience := "http://" + defaultAddr + "/mcp"
	mint := func(tb testing.TB, req authn.TokenRequest) string {
		tb.Helper()
		req.Issuer, req.Audience = issuer, audience
		tok, err := authn.MintHS256([]byte(testSecret), req, time.Now())
		if err != nil {
			tb.Fatal(err)
		}
		return tok
	}
	command := func(dbURL, token string) *exec.Cmd {
		cmd := exec.Command(bin, "stdio")
		// Only what the test sets: nothing from the developer's shell.
		cmd.Env = []string{
			"TICKETD_TOKEN=" + token,
			"TICKETD_JWT_HS256_SECRET=" + testSecret,
			"TICKETD_JWT_ISSUER=" + issuer,
			"TICKETD_DATABASE_URL=" + dbURL,
		}
		return cmd
	}
	// start runs the binary for carol of acme, with a write token, over a
	// fresh database with acme's project, plus env, and connects to it.
	start := func(t *testing.T, env ...string) (context.Context, *mcp.ClientSession, *logtest.Buffer, string) {
		t.Helper()
		rawURL := dbtest.SQLiteURL(t)
		seedProject(t, rawURL, "acme")
		tok := mint(t, authn.TokenRequest{Tenant: "acme", Subject: "carol", Scopes: []string{authn.ScopeRead, authn.ScopeWrite}, TTL: time.Hour})
		cmd := command(rawURL, tok)
		cmd.Env = append(cmd.Env, env...)
		// Read while the process may still write it (a failed connect).
		stderr := &logtest.Buffer{}
		cmd.Stderr = stderr
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		session, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v\nstderr:\n%s", err, stderr)
		}
		return ctx, session, stderr, tok
	}

	t.Run("ListsAndCallsTools", func(t *testing.T) {
		t.Parallel()
		ctx, session, stderr, tok := start(t)
		tools, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		for _, want := range []string{"create_ticket", "preview_ticket", "get_operation_status", "get_ticket", "list_tickets", "list_projects"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list lacks %s (has %v)", want, names)
			}
		}
		_, out, err := createTicket(ctx, session, "Filed over stdio")
		if err != nil {
			t.Fatalf("create_ticket: %v\nstderr:\n%s", err, stderr)
		}
		if out.Ticket.Key != "SUP-1" || out.Ticket.Reporter != "carol" {
			t.Fatalf("create_ticket = %+v, want SUP-1 reported by carol", out)
		}
		// Closing stdin is how a client stops a stdio server; it must exit 0.
		if err := session.Close(); err != nil {
			t.Fatalf("ticketd stdio exited with %v; stderr:\n%s", err, stderr)
		}
		if strings.Contains(stderr.String(), tok) {
			t.Fatal("stderr contains the token")
		}
	})

	// TICKETD_READ_ONLY holds for stdio as for serve: a write token still
	// gets the read tools only, and a write tool is unknown.
	t.Run("ReadOnlyServesTheReadToolsOnly", func(t *testing.T) {
		t.Parallel()
		ctx, session, _, _ := start(t, "TICKETD_READ_ONLY=true")
		defer session.Close()
		tools, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
				t.Errorf("read-only stdio serves %s, which is not read-only", tool.Name)
			}
		}
		if !slices.Contains(names, "get_ticket") || !slices.Contains(names, "list_tickets") {
			t.Errorf("read-only tools/list = %v, want the read tools", names)
		}
		if _, out, err := createTicket(ctx, session, "Filed over read-only stdio"); err == nil {
			t.Errorf("create_ticket on a read-only stdio server made %+v, want it refused", out)
		}
	})

	for _, tc := range []struct {
		name  string
		token func(testing.TB) string
		want  string
	}{
		{"GarbledToken", func(testing.TB) string { return "not-a-jwt" }, "malformed token"},
		{"MissingToken", func(testing.TB) string { return "" }, "set TICKETD_TOKEN"},
		// The agent's operator learns when it expired and what to do.
		{"ExpiredToken", func(tb testing.TB) string {
			tok, err := authn.MintHS256([]byte(testSecret), authn.TokenRequest{
				Issuer: issuer, Audience: audience, Tenant: "acme", Subject: "carol", TTL: time.Minute,
			}, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			if err != nil {
				tb.Fatal(err)
			}
			return tok
		}, "TICKETD_TOKEN expired at 2026-01-02T03:05:05Z: mint a new one (ticketd token; valid 30 days by default)"},
		{"WrongAudience", func(tb testing.TB) string {
			tok, err := authn.MintHS256([]byte(testSecret), authn.TokenRequest{
				Issuer: issuer, Audience: "https://elsewhere.test/mcp", Tenant: "acme", Subject: "carol", TTL: time.Hour,
			}, time.Now())
			if err != nil {
				tb.Fatal(err)
			}
			return tok
		}, "aud"},
	} {
		t.Run("Refuses"+tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := command(dbtest.SQLiteURL(t), tc.token(t))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("ticketd stdio = %v, want exit status 1", err)
			}
			if stdout.Len() > 0 {
				t.Fatalf("stdout, which belongs to the protocol, has %q", &stdout)
			}
			msg := stderr.String()
			if !strings.HasPrefix(msg, "ticketd: stdio: ") || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
				t.Fatalf("stderr %q, want one line \"ticketd: stdio: …\" containing %q", msg, tc.want)
			}
		})
	}
}
