package tracked

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker"
)

// add_comment on a tracker-backed ticket: the comment is made on the issue
// with the operation's marker, and reconciled like a create, against the
// issue's comments.

// commentRequest is what a tracker-backed comment sends, and the IDs of
// the local rows that will mirror it.
type commentRequest struct {
	TicketID  string   `json:"ticket_id"`
	Issue     issueRef `json:"issue"`
	Author    string   `json:"author"`
	Body      string   `json:"body"`
	CommentID string   `json:"comment_id"`
	EventID   string   `json:"event_id"`
}

func commentExternalID(b tracker.Backend, issue issueRef, comment string) string {
	return b.ExternalID(string(issue)) + "/comments/" + comment
}

// ticketIssue returns the number of the issue the tracker-backed ticket t mirrors.
func (e *Engine) ticketIssue(b tracker.Backend, t tickets.Ticket) (issueRef, error) {
	if err := e.usable(t.ProjectID, &b); err != nil {
		return "", err
	}
	return parseRef(b, t.ExternalID)
}

// commentTracked is AddComment on a tracker-backed ticket.
func (e *Engine) commentTracked(ctx context.Context, b tracker.Backend, tenant, author string, id uuid.UUID, t tickets.Ticket, body string) (tickets.CommentResult, error) {
	key := operations.Key{Tenant: tenant, Action: tickets.ActionAddComment, OperationID: id}
	fp := e.m.CommentFingerprint(t.ID, body)
	rec, replayed, err := e.trackedCall(ctx, key, fp, func() (operations.Outcome, error) {
		issue, err := e.ticketIssue(b, t)
		if err != nil {
			return operations.Outcome{}, err
		}
		req := commentRequest{TicketID: t.ID.String(), Issue: issue, Author: author, Body: body,
			CommentID: uuid.Must(uuid.NewV7()).String(), EventID: uuid.Must(uuid.NewV7()).String()}
		raw, err := json.Marshal(req)
		if err != nil {
			return operations.Outcome{}, fmt.Errorf("encode request: %w", err)
		}
		row := downstreamRow{System: b.Kind, ProjectID: t.ProjectID, TicketID: t.ID.String(), Request: string(raw)}
		return e.claimTracked(ctx, key, fp, req.CommentID, author, row, nil)
	})
	if err != nil {
		return tickets.CommentResult{OperationID: id}, fmt.Errorf("add comment: %w", err)
	}
	c, err := e.m.Comment(ctx, tenant, rec.ResultID)
	if err != nil {
		return tickets.CommentResult{OperationID: id}, fmt.Errorf("add comment: read committed comment: %w", err)
	}
	return tickets.CommentResult{OperationID: id, Comment: c, Replayed: replayed}, nil
}

func decodeComment(key operations.Key, row downstreamRow) (commentRequest, error) {
	var req commentRequest
	if err := json.Unmarshal([]byte(row.Request), &req); err != nil {
		return req, fmt.Errorf("operation %s: bad stored request: %w", key, err)
	}
	return req, nil
}

// workComment is one round of a comment: look for the marked comment once a
// request may have been sent, and send only when none is found after the
// settle window.
func (e *Engine) workComment(ctx context.Context, key operations.Key, row downstreamRow, t tracker.Tracker, b tracker.Backend) error {
	req, err := decodeComment(key, row)
	if err != nil {
		return err
	}
	marker := tracker.ActionMarker(key.Tenant, key.Action, key.OperationID.String())
	if row.Attempts > 0 || row.Status == tickets.DownstreamSucceeded {
		comments, err := t.ListComments(ctx, string(req.Issue), row.CreatedAt.Add(-listSkew))
		if err != nil {
			return e.lookFailed(ctx, key, row, fmt.Errorf("list comments of %s: %w", b.ExternalID(string(req.Issue)), err))
		}
		marked := slices.DeleteFunc(comments, func(c tracker.Comment) bool { return !strings.Contains(c.Body, marker) })
		slices.SortStableFunc(marked, func(a, b tracker.Comment) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return refOrder(a.ID, b.ID)
		})
		if len(marked) > 0 {
			return e.settleComments(ctx, key, row, t, b, req, marked)
		}
		if row.Status == tickets.DownstreamSucceeded {
			return e.checkAgain(ctx, key, row, "the list does not show the comment yet")
		}
		if settled := row.LastSentAt.Add(e.opts.Settle); time.Now().Before(settled) {
			return e.wait(ctx, key, row, settled, "no marked comment")
		}
		if until, why, err := e.indexBehind(ctx, key, row, t); err != nil {
			return e.lookFailed(ctx, key, row, err)
		} else if !until.IsZero() {
			return e.wait(ctx, key, row, until, "no marked comment, and "+why)
		}
		e.count(ReconcileResent)
	}
	if err := e.attempt(ctx, key, &row, fmt.Sprintf("comment on %s with the operation's marker", b.ExternalID(string(req.Issue)))); err != nil {
		return err
	}
	c, sendErr := t.CreateComment(ctx, string(req.Issue), issueBody(req.Body, marker))
	return e.answered(ctx, key, row, sendErr, func(ctx context.Context) error {
		return e.succeedComment(ctx, key, row, b, req, c, nil, success{how: "created", actor: historyActor})
	})
}

// settleComments settles a comment from the marked comments found, oldest
// first: the oldest is the comment, any other a duplicate to delete.
func (e *Engine) settleComments(ctx context.Context, key operations.Key, row downstreamRow, t tracker.Tracker, b tracker.Backend, req commentRequest, marked []tracker.Comment) error {
	keep := marked[0]
	keptID := commentExternalID(b, req.Issue, keep.ID)
	dups := row.duplicates()
	for _, other := range marked[1:] {
		id := commentExternalID(b, req.Issue, other.ID)
		if i := slices.IndexFunc(dups, func(d tickets.Duplicate) bool { return d.ExternalID == id }); i >= 0 && dups[i].Closed {
			continue
		}
		deleted := t.DeleteComment(ctx, string(req.Issue), other.ID) == nil
		dups = slices.DeleteFunc(dups, func(d tickets.Duplicate) bool { return d.ExternalID == id })
		dups = append(dups, tickets.Duplicate{ExternalID: id, ExternalURL: other.URL, Closed: deleted, KeptID: keptID})
		e.count(ReconcileDuplicate)
	}
	e.countLook(row, len(marked))
	rctx, cancel := detach(ctx)
	defer cancel()
	return e.succeedComment(rctx, key, row, b, req, keep, dups, success{how: "found", actor: historyActor})
}

// succeedComment records c as the operation's comment: on the first
// settling it adds the local comment that mirrors it, with its event and
// webhook, in one transaction with the record's move to succeeded.
func (e *Engine) succeedComment(ctx context.Context, key operations.Key, row downstreamRow, b tracker.Backend, req commentRequest, c tracker.Comment, dups []tickets.Duplicate, sc success) error {
	ids, err := parseUUIDs(req.TicketID, req.CommentID, req.EventID)
	if err != nil {
		return fmt.Errorf("operation %s: bad stored IDs: %w", key, err)
	}
	sc.extID, sc.extURL, sc.dups, sc.resultID = commentExternalID(b, req.Issue, c.ID), c.URL, dups, req.CommentID
	return e.settleSuccess(ctx, key, row, sc, func(tx *gorm.DB, first bool) error {
		if !first {
			return nil // the local comment names no tracker comment: nothing to repoint
		}
		added, now, err := e.m.InsertComment(tx, key.Tenant, req.Author, key.OperationID, ids[1], ids[2], ids[0], req.Body)
		if err != nil {
			return err
		}
		return e.m.Enqueue(tx, tickets.WriteEvent{ID: ids[2], Tenant: key.Tenant, Kind: tickets.EventCommented, OperationID: key.OperationID,
			At: added.CreatedAt, Ticket: now, Comment: &added})
	})
}
