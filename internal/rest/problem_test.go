package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/errcode/errcodetest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// TestFailMapsEveryCode checks the code table through fail, with the errors
// the service really returns, including those no HTTP test can provoke
// without breaking the store (lost COMMIT replies, an unreachable database).
func TestFailMapsEveryCode(t *testing.T) {
	t.Parallel()
	const opID = "0190f1c4-6b8a-7cc2-9a3e-5d1f2e3a4b5c"
	secret := "pq: connection refused to 10.0.0.7"
	for _, c := range []struct {
		err        error
		status     int
		code       errcode.Code
		retryAfter string
	}{
		{&tickets.ValidationError{Fields: []tickets.FieldError{{Field: "title", Message: "is required"}}}, 400, errcode.InvalidInput, ""},
		{fmt.Errorf("create ticket: %w", operations.ErrConflict), 422, errcode.IdempotencyConflict, ""},
		{fmt.Errorf("create ticket: %w", operations.ErrInProgress), 409, errcode.OperationInProgress, "1"},
		{fmt.Errorf("create ticket: %w: %s", operations.ErrOutcomeUnknown, secret), 503, errcode.OutcomeUnknown, "2"},
		{fmt.Errorf("ticket: %w", tickets.ErrNotFound), 404, errcode.NotFound, ""},
		{fmt.Errorf("project: %w", tickets.ErrExists), 409, errcode.AlreadyExists, ""},
		{fmt.Errorf("%w: %s", operations.ErrUnavailable, secret), 503, errcode.Unavailable, "5"},
		{errors.New(secret), 500, errcode.Internal, ""},
	} {
		t.Run(string(c.code), func(t *testing.T) {
			w := httptest.NewRecorder()
			fail(w, httptest.NewRequest(http.MethodPost, "/api/v1/tickets", nil), c.err, opID)

			var p problem
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			if w.Code != c.status || p.Status != c.status || p.Code != c.code || p.OperationID != opID ||
				p.Type != problemTypeBase+string(c.code) || p.Retryable != c.code.Retryable() {
				t.Errorf("answer %d %+v, want %d %s for operation %s", w.Code, p, c.status, c.code, opID)
			}
			if got := w.Header().Get("Retry-After"); got != c.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, c.retryAfter)
			}
			if strings.Contains(w.Body.String(), secret) {
				t.Errorf("problem leaks the cause: %s", w.Body)
			}
		})
	}
}

func TestSFString(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`"abc"`, "abc", true},
		{`"a\"b\\c"`, `a"b\c`, true},
		{`""`, "", true},
		{`"abc`, "", false},
		{`"a"b"`, "", false},
		{`"a\b"`, "", false},
		{"\"a\tb\"", "", false},
		{"\"caf\u00e9\"", "", false},
	} {
		got, err := sfString(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("sfString(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestProblemsFollowTheErrorTable walks errcode.Table: every code, whether
// a handler fails with it or the edge refuses with it, is a problem with
// the row's status, title, retryability, Retry-After and operator step, and
// shows the error's own text only where the row allows it, never a driver's.
func TestProblemsFollowTheErrorTable(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, w *httptest.ResponseRecorder, row errcode.Row) problem {
		t.Helper()
		var p problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if w.Code != row.Status || p.Status != row.Status || p.Code != row.Code || p.Title != row.Title ||
			p.Retryable != row.Retryable || p.NextStep != row.OperatorStep || p.Type != problemTypeBase+string(row.Code) {
			t.Errorf("answer %d %+v, want the row %+v", w.Code, p, row)
		}
		want := ""
		if row.RetryAfter > 0 {
			want = strconv.Itoa(int(row.RetryAfter.Seconds()))
		}
		if got := w.Header().Get("Retry-After"); got != want {
			t.Errorf("Retry-After = %q, want %q", got, want)
		}
		if strings.Contains(w.Body.String(), "10.0.0.7") || strings.Contains(w.Body.String(), "ticketd_owner") {
			t.Errorf("problem shows the driver's text: %s", w.Body)
		}
		return p
	}
	errcodetest.Walk(t, func(t *testing.T, row errcode.Row, err error) {
		w := httptest.NewRecorder()
		Reject(w, httptest.NewRequest(http.MethodPost, "/api/v1/tickets", nil), row.Status, row.Code, "refused at the edge")
		check(t, w, row)
		if err == nil {
			return
		}
		w = httptest.NewRecorder()
		fail(w, httptest.NewRequest(http.MethodPost, "/api/v1/tickets", nil), err, "")
		if p := check(t, w, row); !row.ShowCause && p.Detail != row.Public {
			t.Errorf("detail %q, want the row's public message %q", p.Detail, row.Public)
		}
	})
}
