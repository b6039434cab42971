package tracked

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker"
)

// resolveFound records an operator's finding that a tracker-backed
// operation happened, after checking that what they name exists: the issue
// a create made or an edit changed, or the comment a comment made. The
// local rows mirror it as if reconciliation had found it.
func (e *Engine) resolveFound(ctx context.Context, key operations.Key, row downstreamRow, actor string, r tickets.Resolution) error {
	b, err := e.m.TrackerBackend(ctx, key.Tenant, row.ProjectID)
	if err != nil || b == nil {
		return fmt.Errorf("%w: project backend: %v", tickets.ErrUnavailable, err)
	}
	t, err := e.openTracker(key.Tenant, *b)
	if err != nil {
		return fmt.Errorf("%w: %v", tickets.ErrUnavailable, err)
	}
	sc := success{how: "resolved", actor: actor, note: r.Reason}
	if key.Action == tickets.ActionAddComment {
		req, err := decodeComment(key, row)
		if err != nil {
			return err
		}
		id, err := commentNumber(*b, req.Issue, r.ExternalID)
		if err != nil {
			return err
		}
		c, err := t.GetComment(ctx, string(req.Issue), id)
		switch {
		case errors.Is(err, tracker.ErrRejected):
			return invalidField("external_id", "%s has no comment %s (%v)", b.Where(), id, err)
		case err != nil:
			return fmt.Errorf("%w: read comment %s: %v", tickets.ErrUnavailable, id, err)
		case issueRef(c.Issue) != req.Issue:
			return invalidField("external_id", "comment %s is on %s; the comment was to be on %s", id, b.ExternalID(c.Issue), b.ExternalID(string(req.Issue)))
		}
		return e.succeedComment(ctx, key, row, *b, req, c, row.duplicates(), sc)
	}
	number, err := parseRef(*b, r.ExternalID)
	if err != nil {
		return err
	}
	issue, err := t.GetIssue(ctx, string(number))
	switch {
	case errors.Is(err, tracker.ErrRejected):
		return invalidField("external_id", "%s has no issue %s (%v)", b.Where(), b.ExternalID(string(number)), err)
	case err != nil:
		return fmt.Errorf("%w: read issue %s: %v", tickets.ErrUnavailable, b.ExternalID(string(number)), err)
	}
	if key.Action != tickets.ActionUpdateTicket {
		return e.succeedCreate(ctx, key, row, issue, *b, row.duplicates(), sc)
	}
	var req editRequest
	if err := json.Unmarshal([]byte(row.Request), &req); err != nil {
		return fmt.Errorf("operation %s: bad stored request: %w", key, err)
	}
	if number != req.Issue {
		return invalidField("external_id", "the update was of %s, not %s", b.ExternalID(string(req.Issue)), b.ExternalID(string(number)))
	}
	return e.succeedEdit(ctx, key, row, *b, req, issue, sc)
}

// commentNumber reads "owner/name#12/comments/345" (Jira: "OPS-12/comments/345")
// or "345" as a comment on issue of b.
func commentNumber(b tracker.Backend, issue issueRef, ref string) (string, error) {
	num := ref
	if on, c, ok := strings.Cut(ref, "/comments/"); ok {
		n, err := parseRef(b, on)
		if err != nil {
			return "", err
		}
		if n != issue {
			return "", invalidField("external_id", "the comment was to be on %s, not %s", b.ExternalID(string(issue)), b.ExternalID(string(n)))
		}
		num = c
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 {
		return "", invalidField("external_id", "must be a comment on %s: %s/comments/345 or 345", b.ExternalID(string(issue)), b.ExternalID(string(issue)))
	}
	return strconv.FormatInt(n, 10), nil
}
