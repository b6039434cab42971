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
		id, err := commentNumber(b.Repository, req.Issue, r.ExternalID)
		if err != nil {
			return err
		}
		c, err := t.GetComment(ctx, id)
		switch {
		case errors.Is(err, tracker.ErrRejected):
			return invalidField("external_id", "%s has no comment %d (%v)", b.Repository, id, err)
		case err != nil:
			return fmt.Errorf("%w: read comment %d: %v", tickets.ErrUnavailable, id, err)
		case c.Issue != req.Issue:
			return invalidField("external_id", "comment %d is on #%d; the comment was to be on #%d", id, c.Issue, req.Issue)
		}
		return e.succeedComment(ctx, key, row, b.Repository, req, c, row.duplicates(), sc)
	}
	number, err := issueNumber(b.Repository, r.ExternalID)
	if err != nil {
		return err
	}
	issue, err := t.GetIssue(ctx, number)
	switch {
	case errors.Is(err, tracker.ErrRejected):
		return invalidField("external_id", "%s has no issue #%d (%v)", b.Repository, number, err)
	case err != nil:
		return fmt.Errorf("%w: read issue #%d: %v", tickets.ErrUnavailable, number, err)
	}
	if key.Action != tickets.ActionUpdateTicket {
		return e.succeedCreate(ctx, key, row, issue, b.Repository, row.duplicates(), sc)
	}
	var req editRequest
	if err := json.Unmarshal([]byte(row.Request), &req); err != nil {
		return fmt.Errorf("operation %s: bad stored request: %w", key, err)
	}
	if number != req.Issue {
		return invalidField("external_id", "the update was of %s#%d, not #%d", b.Repository, req.Issue, number)
	}
	return e.succeedEdit(ctx, key, row, b.Repository, req, issue, sc)
}

// commentNumber reads "owner/name#12/comments/345" or "345" as a comment
// on issue of repo.
func commentNumber(repo string, issue int64, ref string) (int64, error) {
	num := ref
	if on, c, ok := strings.Cut(ref, "/comments/"); ok {
		n, err := issueNumber(repo, on)
		if err != nil {
			return 0, err
		}
		if n != issue {
			return 0, invalidField("external_id", "the comment was to be on #%d, not #%d", issue, n)
		}
		num = c
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 {
		return 0, invalidField("external_id", "must be a comment on %s#%d: %s#%d/comments/345 or 345", repo, issue, repo, issue)
	}
	return n, nil
}
