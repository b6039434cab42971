package console

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/errcode/errcodetest"
)

// TestProblemsFollowTheErrorTable walks errcode.Table: every code's page
// has the row's status and next step, and shows the error's own text only
// where the row allows it, never a driver's.
func TestProblemsFollowTheErrorTable(t *testing.T) {
	t.Parallel()
	c := &console{log: slog.New(slog.DiscardHandler)}
	errcodetest.Walk(t, func(t *testing.T, row errcode.Row, err error) {
		if p := problemFor(row.Code, "message"); p.Next != row.PersonStep || p.Next == "" {
			t.Errorf("problemFor(%s) says %q, want the row's person step %q", row.Code, p.Next, row.PersonStep)
		}
		if err == nil {
			return
		}
		p, status := c.problemOf(httptest.NewRequest("GET", "/console/tickets", nil), err)
		if p.Code != row.Code || status != row.Status || p.Next != row.PersonStep {
			t.Errorf("problemOf(%v) = %s %d %q, want %s %d %q", err, p.Code, status, p.Next, row.Code, row.Status, row.PersonStep)
		}
		if strings.Contains(p.Message, "10.0.0.7") || strings.Contains(p.Message, "ticketd_owner") {
			t.Errorf("%s page shows the driver's text: %q", row.Code, p.Message)
		}
		if !row.ShowCause && p.Message != sentence(row.Public) {
			t.Errorf("%s page says %q, want the row's public message %q", row.Code, p.Message, row.Public)
		}
	})
}
