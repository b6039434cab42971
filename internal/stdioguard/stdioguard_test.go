package stdioguard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/stdioguard"
)

// session is a real mcp.Server served over the guarded stdio transport,
// with the test as its client writing raw lines.
type session struct {
	stdin   *io.PipeWriter
	lines   chan string // every line the server wrote, in order
	done    chan error  // Run's result
	slowRan atomic.Int64
}

// serve starts the server; its "slow" tool takes slowFor, and both tools'
// schemas have a default (the SDK's panic case for null arguments).
func serve(t *testing.T, slowFor time.Duration) *session {
	t.Helper()
	s := &session{lines: make(chan string, 100), done: make(chan error, 1)}
	server := mcp.NewServer(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	schema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"text": {Type: "string", Default: json.RawMessage(`"default"`)},
	}}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", InputSchema: schema}, func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in["text"].(string)}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "slow", InputSchema: schema}, func(_ context.Context, _ *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		// Not cancellable on purpose: like a write on WithoutCancel, it
		// finishes whatever the session does.
		time.Sleep(slowFor)
		s.slowRan.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow done"}}}, nil, nil
	})

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s.stdin = inW
	out := stdioguard.NewWriter(outW)
	transport := &stdioguard.Transport{
		Transport:    &mcp.IOTransport{Reader: stdioguard.Filter(inR, out, stdioguard.FilterOptions{MaxLine: 4096}), Writer: out},
		DrainTimeout: 5 * time.Second,
	}
	go func() {
		s.done <- server.Run(context.Background(), transport)
		_ = outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop after stdin closed")
		}
	})
	return s
}

func (s *session) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		t.Fatalf("write stdin: %v", err)
	}
}

type message struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"structuredContent"`
	} `json:"result"`
	Error *jsonrpc.Error `json:"error"`
}

// next returns the server's next line.
func (s *session) next(t *testing.T) message {
	t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			t.Fatal("server output ended")
		}
		var m message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("server wrote a line that is not JSON: %v\n%s", err, line)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no answer from the server")
	}
	panic("unreachable")
}

func (s *session) initialize(t *testing.T) {
	t.Helper()
	s.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := s.next(t); m.Result == nil {
		t.Fatalf("initialize failed: %+v", m.Error)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func callLine(id int, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + jsonInt(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestBadLinesAreAnsweredAndTheSessionGoesOn(t *testing.T) {
	t.Parallel()
	s := serve(t, 0)
	s.initialize(t)
	tests := []struct {
		name, line string
		wantCode   int64
	}{
		{"NotJSON", `this is not json`, jsonrpc.CodeParseError},
		{"Truncated", `{"jsonrpc":"2.0","id":1,"method":`, jsonrpc.CodeParseError},
		{"TooLong", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`, jsonrpc.CodeParseError},
		{"Batch", `[` + callLine(1, "echo", `{}`) + `]`, jsonrpc.CodeInvalidRequest},
		{"NotJSONRPC", `{"hello":"world"}`, jsonrpc.CodeInvalidRequest},
		{"NotAnObject", `42`, jsonrpc.CodeInvalidRequest},
		{"UndeclaredMethod", `{"jsonrpc":"2.0","id":5,"method":"logging/setLevel"}`, jsonrpc.CodeMethodNotFound},
	}
	for i, tt := range tests {
		s.send(t, tt.line)
		m := s.next(t)
		if m.Error == nil || m.Error.Code != tt.wantCode {
			t.Fatalf("%s: answered %+v, want JSON-RPC error %d", tt.name, m, tt.wantCode)
		}
		// A response always names an id: the request's, or null when it
		// has none that can be trusted (JSON-RPC 2.0 §5).
		if want := map[bool]string{true: "5", false: "null"}[tt.name == "UndeclaredMethod"]; string(m.ID) != want {
			t.Errorf("%s: answered with id %q, want %s", tt.name, m.ID, want)
		}
		// After every bad line the session still serves calls.
		s.send(t, callLine(100+i, "echo", `{"text":"still here"}`))
		m = s.next(t)
		if m.Result == nil || m.Result.IsError || m.Result.Content[0].Text != "still here" || string(m.ID) != jsonInt(100+i) {
			t.Fatalf("%s: call after the bad line answered %+v", tt.name, m)
		}
	}

	// arguments null would panic inside the SDK; it is an invalid_input
	// tool result instead.
	s.send(t, callLine(7, "echo", `null`))
	if m := s.next(t); m.Result == nil || !m.Result.IsError || m.Result.StructuredContent.Error.Code != "invalid_input" {
		t.Fatalf("null arguments answered %+v, want an invalid_input tool error", m)
	}
	// A blank line is no message and gets no answer.
	s.send(t, "   ")
	s.send(t, callLine(8, "echo", `{}`))
	if m := s.next(t); string(m.ID) != "8" || m.Result == nil || m.Result.Content[0].Text != "default" {
		t.Fatalf("call after a blank line answered %+v", m)
	}
}

func TestRequestsBeforeEOFAreAnswered(t *testing.T) {
	t.Parallel()
	s := serve(t, 300*time.Millisecond)
	s.initialize(t)
	s.send(t, callLine(1, "slow", `{}`))
	s.send(t, callLine(2, "echo", `{"text":"last"}`))
	if err := s.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]message{}
	for range 2 {
		m := s.next(t)
		got[string(m.ID)] = m
	}
	if m := got["1"]; m.Result == nil || m.Result.Content[0].Text != "slow done" {
		t.Errorf("slow call answered %+v, want its result", m)
	}
	if m := got["2"]; m.Result == nil || m.Result.Content[0].Text != "last" {
		t.Errorf("echo call answered %+v, want its result", m)
	}
	if n := s.slowRan.Load(); n != 1 {
		t.Errorf("slow tool completed %d times, want 1", n)
	}
	select {
	case err := <-s.done:
		if err != nil && !strings.Contains(err.Error(), "EOF") {
			t.Errorf("Run ended with %v, want the end of input", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the answers")
	}
	s.done <- nil // for the cleanup
}
