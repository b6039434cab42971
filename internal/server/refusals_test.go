package server_test

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/logtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestMCPRefusalsAreCountedAndLogged sends a burst of get_ticket calls over
// one tenant's read rate through the real server, with a go-sdk client: the
// rate_limited series of ticketd_requests_total moves by exactly the number
// of calls refused, and each refusal has an access-log line with the
// tenant, the tool and the code, as a REST 429 does. A step-up refusal and
// a refused body are counted under their codes too.
func TestMCPRefusalsAreCountedAndLogged(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		Edge:   server.Edge{Limits: limits.Config{WritesPerSecond: 0.01, ReadsPerSecond: 0.01, Burst: 3}},
	})
	env.SeedProject(t, "acme")
	token := env.Token(t, "acme", authn.ScopeRead)
	before, err := scrapeMetrics(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	limited := requestsSample("mcp", mcptools.ToolGetTicket, "rate_limited")

	cs := env.Connect(t, token)
	const calls = 10
	refused := 0
	for range calls {
		res := servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": "SUP-1"})
		var out struct {
			Error struct {
				Code         string `json:"code"`
				RetryAfterMS *int64 `json:"retry_after_ms"`
			} `json:"error"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		switch out.Error.Code {
		case "rate_limited":
			if out.Error.RetryAfterMS == nil {
				t.Errorf("rate_limited without retry_after_ms: %s", b)
			}
			refused++
		case "not_found":
		default:
			t.Fatalf("get_ticket answered %s", b)
		}
	}
	// A write with a read-only token is stepped up (403), and a batch is
	// refused at the edge.
	if _, err := servertest.TryCall(cs, mcptools.ToolCreateTicket, map[string]any{}); err == nil {
		t.Error("create_ticket with a read-only token did not fail with the step-up 403")
	}
	if status, _, _ := rpc(t, env, token, legacy, `[`+callBody(mcptools.ToolGetTicket, `{"id":"SUP-1"}`)+`]`, nil); status != http.StatusBadRequest {
		t.Errorf("batch: %d, want 400", status)
	}

	after, err := scrapeMetrics(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	if refused == 0 || refused == calls {
		t.Fatalf("%d of %d calls refused; want the burst served and the rest refused", refused, calls)
	}
	if got := after[limited] - before[limited]; got != float64(refused) {
		t.Errorf("%s moved by %v, want %d (the refused calls)", limited, got, refused)
	}
	for sample, want := range map[string]float64{
		requestsSample("mcp", mcptools.ToolCreateTicket, "forbidden"): 1,
		requestsSample("mcp", "unmatched", "invalid_input"):           1, // a batch names no one tool
	} {
		if got := after[sample] - before[sample]; got != want {
			t.Errorf("%s moved by %v, want %v", sample, got, want)
		}
	}

	logged := 0
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line struct {
			Msg, Path, Tenant, Route, Code string
			Status                         int
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "http request" || line.Path != server.MCPPath {
			continue
		}
		if line.Code == "rate_limited" {
			logged++
			if line.Tenant != "acme" || line.Route != mcptools.ToolGetTicket {
				t.Errorf("refusal logged as %+v, want tenant acme and route get_ticket", line)
			}
		}
	}
	if logged != refused {
		t.Errorf("%d refusals logged with code rate_limited, want %d", logged, refused)
	}
}
