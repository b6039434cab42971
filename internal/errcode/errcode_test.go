package errcode_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/errcode/errcodetest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

func TestOf(t *testing.T) {
	t.Parallel()
	if got := errcode.Of(nil); got != "" {
		t.Errorf("Of(nil) = %q, want none", got)
	}
	for _, c := range errcodetest.Examples {
		if got := errcode.Of(c.Err); got != c.Code {
			t.Errorf("Of(%v) = %q, want %q", c.Err, got, c.Code)
		}
	}
}

func TestRetryableAndNextStep(t *testing.T) {
	t.Parallel()
	retryable := map[errcode.Code]bool{
		errcode.InvalidInput: false, errcode.IdempotencyConflict: false, errcode.OperationInProgress: true,
		errcode.OutcomeUnknown: true, errcode.OperationFailed: false, errcode.OperationExpired: false, errcode.NotFound: false, errcode.AlreadyExists: false, errcode.VersionConflict: false, errcode.StateConflict: false, errcode.Forbidden: false,
		errcode.Unauthenticated: false, errcode.Unavailable: true, errcode.Internal: true,
	}
	steps := map[string]errcode.Code{}
	for code, want := range retryable {
		if got := code.Retryable(); got != want {
			t.Errorf("%s.Retryable() = %v, want %v", code, got, want)
		}
		step := code.NextStep()
		if other, dup := steps[step]; dup {
			t.Errorf("%s and %s share the next step %q", code, other, step)
		}
		steps[step] = code
	}
}

// TestTableIsComplete checks that every row says everything a transport
// needs, and that codes and next steps are distinct.
func TestTableIsComplete(t *testing.T) {
	t.Parallel()
	seen := map[errcode.Code]bool{}
	for _, r := range errcode.Table {
		if seen[r.Code] {
			t.Errorf("%s has two rows", r.Code)
		}
		seen[r.Code] = true
		if r.Meaning == "" || r.Retry == "" || r.MCP == "" || r.Status < 400 || r.Title == "" || r.Public == "" ||
			r.AgentStep == "" || r.OperatorStep == "" || r.PersonStep == "" || r.Outcome == "" {
			t.Errorf("row %s is incomplete: %+v", r.Code, r)
		}
		if r.Retryable != (r.RetryAfter > 0) && r.Code != errcode.OutcomeUnknown && r.Code != errcode.Internal {
			t.Errorf("%s: retryable %v but Retry-After %v", r.Code, r.Retryable, r.RetryAfter)
		}
		if r.Status >= 500 && r.ShowCause {
			t.Errorf("%s: a %d answer is the server's failure and must not show its cause", r.Code, r.Status)
		}
	}
	if errcode.Lookup("no_such_code").Code != errcode.Internal {
		t.Error("an unknown code must read as internal")
	}
}

// TestMessagePolicy checks the one rule on what error text a caller sees.
func TestMessagePolicy(t *testing.T) {
	t.Parallel()
	secret := fmt.Errorf("%w: dial tcp 10.0.0.7:5432: connection refused", operations.ErrUnavailable)
	if got := errcode.Of(secret).Message(secret); strings.Contains(got, "10.0.0.7") {
		t.Errorf("unavailable shows its cause: %q", got)
	}
	invalid := fmt.Errorf("create ticket: %w", &tickets.ValidationError{Fields: []tickets.FieldError{{Field: "title", Message: "is required"}}})
	if got := errcode.Of(invalid).Message(invalid); !strings.HasSuffix(got, "title: is required") || strings.Contains(got, "create ticket") {
		t.Errorf("invalid_input message = %q, want the field list alone", got)
	}
}

var update = flag.Bool("update", false, "rewrite the error tables of docs/agents.md and docs/contract.md from errcode.Table")

// realRows is errcode.Table without errcodetest.MadeUp, which no document
// lists.
func realRows() []errcode.Row {
	return slices.DeleteFunc(slices.Clone(errcode.Table), errcodetest.IsMadeUp)
}

// agentsTable renders rows as docs/agents.md's error table.
func agentsTable(rows []errcode.Row) string {
	var b strings.Builder
	b.WriteString("| code | meaning | retry? | MCP | REST |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		mcp := r.MCP
		if mcp == errcode.MCPToolError {
			mcp = "`isError`"
		}
		rest := strconv.Itoa(r.Status)
		if r.RetryAfter > 0 {
			rest += " + `Retry-After`"
		}
		if r.StatusNote != "" {
			rest += " " + r.StatusNote
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", r.Code, r.Meaning, r.Retry, mcp, rest)
	}
	return b.String()
}

// contractTable renders rows as docs/contract.md's error table.
func contractTable(rows []errcode.Row) string {
	var b strings.Builder
	b.WriteString("| code | retryable | MCP | HTTP | Retry-After | status | counted as |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		mcp := r.MCP
		if mcp == errcode.MCPToolError {
			mcp = "`isError`"
		}
		retryable := "no"
		if r.Retryable {
			retryable = "yes"
		}
		status := strconv.Itoa(r.Status)
		if r.StatusNote != "" {
			status += " " + r.StatusNote
		}
		retryAfter := "—"
		if r.RetryAfter > 0 {
			retryAfter = r.RetryAfter.String()
		}
		opStatus := "—"
		if r.OperationStatus != "" {
			opStatus = "`" + string(r.OperationStatus) + "`"
		}
		counted := "—"
		if r.Outcome != errcode.NotCounted {
			counted = "`" + string(r.Outcome) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", r.Code, retryable, mcp, status, retryAfter, opStatus, counted)
	}
	return b.String()
}

// checkDocTable checks that the document at path holds want, the table
// rendered from errcode.Table; with -update it rewrites the table there (from
// its header line to the blank line after it) instead.
func checkDocTable(t *testing.T, path, want string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	if *update {
		header, _, _ := strings.Cut(want, "\n")
		start := strings.Index(doc, header+"\n")
		if start < 0 {
			t.Fatalf("%s has no table headed %q", path, header)
		}
		end := strings.Index(doc[start:], "\n\n")
		if end < 0 {
			end = len(doc) - start
		}
		doc = doc[:start] + want + doc[start+end+1:]
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !strings.Contains(doc, want) {
		t.Errorf("%s's error table differs from errcode.Table; run go test ./internal/errcode -update, or make it read:\n%s", path, want)
	}
}

// TestAgentsTable keeps docs/agents.md's error table what the table says.
func TestAgentsTable(t *testing.T) {
	t.Parallel()
	checkDocTable(t, "../../docs/agents.md", agentsTable(realRows()))
}

// TestContractTable keeps docs/contract.md's error table what the table says.
func TestContractTable(t *testing.T) {
	t.Parallel()
	checkDocTable(t, "../../docs/contract.md", contractTable(realRows()))
}

// TestDocTablesFollowTheTable checks that both documents' tables are
// rendered from the rows alone: errcodetest's made-up row, the one edit of
// a new code, appears in both with what its row says.
func TestDocTablesFollowTheTable(t *testing.T) {
	t.Parallel()
	m := errcodetest.MadeUp
	agents := "| `made_up_code` | a code only the tests know | no | `isError` | 418 |\n"
	contract := "| `made_up_code` | no | `isError` | 418 | — | — | `failed` |\n"
	if got := agentsTable(errcode.Table); !strings.HasSuffix(got, agents) {
		t.Errorf("agents table ends\n%s\nwant %s's line %q", got, m.Code, agents)
	}
	if got := contractTable(errcode.Table); !strings.HasSuffix(got, contract) {
		t.Errorf("contract table ends\n%s\nwant %s's line %q", got, m.Code, contract)
	}
}

// TestRowErrorsAreClassified checks that every error a row names is
// classified as that row's code, wrapped as a caller wraps it: the made-up
// row's by its row alone, with no case in Of.
func TestRowErrorsAreClassified(t *testing.T) {
	t.Parallel()
	seen := false
	for _, r := range errcode.Table {
		for _, e := range r.Errors {
			seen = true
			if got := errcode.Of(fmt.Errorf("create ticket: %w", e)); got != r.Code {
				t.Errorf("Of(%v) = %q, want its row's %q", e, got, r.Code)
			}
		}
	}
	if !seen {
		t.Error("no row names an error; errcodetest.MadeUp should")
	}
}
