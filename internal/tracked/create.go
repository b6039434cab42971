package tracked

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker"
)

// create_ticket in a tracker-backed project: the issue is the ticket, and
// the local row mirrors it once proven.

// trackedRequest is what a tracker-backed create sends, kept so any
// replica can send it again.
type trackedRequest struct {
	ProjectID   string           `json:"project_id"`
	Title       string           `json:"title"`
	Description string           `json:"description"`
	Priority    tickets.Priority `json:"priority"`
	Labels      []string         `json:"labels"`
	Reporter    string           `json:"reporter"`
	// Parent is the parent ticket's UUID, kept in ticketd and never sent:
	// the record sets it on the ticket (keepParent).
	Parent string `json:"parent,omitempty"`
}

func (r trackedRequest) ticket() tickets.NewTicket {
	return tickets.NewTicket{ProjectID: r.ProjectID, Title: r.Title, Description: r.Description, Priority: r.Priority, Labels: r.Labels}
}

// issueBody is an issue's body: the description, then the marker of the
// operation that created it.
func issueBody(description, marker string) string {
	if description == "" {
		return marker
	}
	return description + "\n\n" + marker
}

// createTracked is CreateTicket in a tracker-backed project.
func (e *Engine) createTracked(ctx context.Context, b tracker.Backend, tenant, reporter string, id uuid.UUID, n tickets.NewTicket) (tickets.CreateResult, error) {
	key := operations.Key{Tenant: tenant, Action: tickets.ActionCreateTicket, OperationID: id}
	res := tickets.CreateResult{OperationID: id}
	rec, replayed, err := e.trackedCall(ctx, key, tickets.Fingerprint(n), func() (operations.Outcome, error) {
		var consume operations.WriteFunc
		if gate := e.m.CreateGate(key, tickets.Fingerprint(n), reporter, n); gate != nil {
			var err error
			if consume, err = gate(ctx); err != nil {
				return operations.Outcome{}, err
			}
		}
		ticketID := uuid.Must(uuid.NewV7())
		raw, err := json.Marshal(trackedRequest{ProjectID: n.ProjectID, Title: n.Title, Description: n.Description,
			Priority: n.Priority, Labels: n.Labels, Reporter: reporter, Parent: n.Parent})
		if err != nil {
			return operations.Outcome{}, fmt.Errorf("encode request: %w", err)
		}
		row := downstreamRow{System: b.Kind, ProjectID: n.ProjectID, TicketID: ticketID.String(), Request: string(raw)}
		return e.claimTracked(ctx, key, tickets.Fingerprint(n), ticketID.String(), reporter, row, func(tx *gorm.DB, _ *downstreamRow) error {
			if n.Parent != "" {
				// Refused here, nothing is claimed or sent.
				if err := e.m.CheckParent(tx, tenant, ticketID, n.Parent); err != nil {
					return err
				}
			}
			if consume == nil {
				return nil
			}
			return consume(tx)
		})
	})
	if err != nil {
		return res, fmt.Errorf("create ticket: %w", err)
	}
	t, err := e.m.Ticket(ctx, tenant, rec.ResultID)
	if err != nil {
		return res, fmt.Errorf("create ticket: read created ticket: %w", err)
	}
	res.Ticket, res.Replayed = t, replayed
	return res, nil
}

// workCreate is one round of a create: look for the marked issue once a
// request may have been sent, and send only when none is found after the
// settle window. A settled create is only ever looked at (a duplicate
// check), even one an operator resolved before any request was counted.
func (e *Engine) workCreate(ctx context.Context, key operations.Key, row downstreamRow, t tracker.Tracker, b tracker.Backend) error {
	mark := tracker.Mark{Tenant: key.Tenant, OperationID: key.OperationID.String()}
	if row.Attempts > 0 || row.Status == tickets.DownstreamSucceeded {
		marked, err := t.FindMarked(ctx, mark, row.CreatedAt.Add(-listSkew))
		if err != nil {
			return e.lookFailed(ctx, key, row, fmt.Errorf("list marked issues: %w", err))
		}
		slices.SortStableFunc(marked, func(a, b tracker.Issue) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return refOrder(a.Ref, b.Ref)
		})
		if len(marked) > 0 {
			return e.settleFound(ctx, key, row, t, b, marked)
		}
		if row.Status == tickets.DownstreamSucceeded {
			// A duplicate check that sees not even the recorded issue: the
			// list lags; look again later.
			return e.checkAgain(ctx, key, row, "the list does not show the issue yet")
		}
		if settled := row.LastSentAt.Add(e.opts.Settle); time.Now().Before(settled) {
			return e.wait(ctx, key, row, settled, "no marked issue")
		}
		if until, why, err := e.indexBehind(ctx, key, row, t); err != nil {
			return e.lookFailed(ctx, key, row, err)
		} else if !until.IsZero() {
			return e.wait(ctx, key, row, until, "no marked issue, and "+why)
		}
		e.count(ReconcileResent)
	}
	return e.sendCreate(ctx, key, row, t, b, mark)
}

// sendCreate makes one create request, counted and committed before it leaves.
func (e *Engine) sendCreate(ctx context.Context, key operations.Key, row downstreamRow, t tracker.Tracker, b tracker.Backend, mark tracker.Mark) error {
	var req trackedRequest
	if err := json.Unmarshal([]byte(row.Request), &req); err != nil {
		return fmt.Errorf("operation %s: bad stored request: %w", key, err)
	}
	if err := e.attempt(ctx, key, &row, "create issue in "+b.Where()+" with the operation's marker"); err != nil {
		return err
	}
	in := tracker.NewIssue{Title: req.Title, Body: issueBody(req.Description, mark.Text()), Labels: append([]string{tracker.Label}, req.Labels...), Mark: mark}
	if b.HoldsPriorityAndAssignee() {
		in.Priority = string(req.Priority)
	}
	issue, err := t.CreateIssue(ctx, in)
	return e.answered(ctx, key, row, err, func(ctx context.Context) error {
		return e.succeedCreate(ctx, key, row, issue, b, nil, success{how: "created", actor: historyActor})
	})
}

// settleFound settles an operation from the marked issues found, oldest
// first: the oldest is the ticket, any other a duplicate to close.
func (e *Engine) settleFound(ctx context.Context, key operations.Key, row downstreamRow, t tracker.Tracker, b tracker.Backend, marked []tracker.Issue) error {
	keep := marked[0]
	mark := tracker.Mark{Tenant: key.Tenant, OperationID: key.OperationID.String()}
	dups := row.duplicates()
	for _, other := range marked[1:] {
		id := b.ExternalID(other.Ref)
		if i := slices.IndexFunc(dups, func(d tickets.Duplicate) bool { return d.ExternalID == id }); i >= 0 && dups[i].Closed {
			continue
		}
		closed := other.State == b.StatusName(string(tickets.StatusClosed)) || t.CloseDuplicate(ctx, mark, keep, other) == nil
		dups = slices.DeleteFunc(dups, func(d tickets.Duplicate) bool { return d.ExternalID == id })
		dups = append(dups, tickets.Duplicate{ExternalID: id, ExternalURL: other.URL, Closed: closed, KeptID: b.ExternalID(keep.Ref)})
		e.count(ReconcileDuplicate)
	}
	e.countLook(row, len(marked))
	rctx, cancel := detach(ctx)
	defer cancel()
	return e.succeedCreate(rctx, key, row, keep, b, dups, success{how: "found", actor: historyActor})
}

// countLook counts a look that found n marked copies: found for an
// unsettled operation, verified for a duplicate check that found one.
func (e *Engine) countLook(row downstreamRow, n int) {
	if row.Status != tickets.DownstreamSucceeded {
		e.count(ReconcileFound)
	} else if n == 1 {
		e.count(ReconcileVerified)
	}
}

// succeedCreate records keep as the operation's issue: on the first
// settling it creates the local ticket that mirrors it, in one transaction
// with the record's move to succeeded; on a later duplicate check it
// repoints the mirror at the oldest issue if that changed.
func (e *Engine) succeedCreate(ctx context.Context, key operations.Key, row downstreamRow, keep tracker.Issue, b tracker.Backend, dups []tickets.Duplicate, sc success) error {
	var req trackedRequest
	if err := json.Unmarshal([]byte(row.Request), &req); err != nil {
		return fmt.Errorf("operation %s: bad stored request: %w", key, err)
	}
	ticketID, err := uuid.Parse(row.TicketID)
	if err != nil {
		return fmt.Errorf("operation %s: bad ticket ID: %w", key, err)
	}
	sc.extID, sc.extURL, sc.dups, sc.resultID = b.ExternalID(keep.Ref), keep.URL, dups, ticketID.String()
	return e.settleSuccess(ctx, key, row, sc, func(tx *gorm.DB, first bool) error {
		if !first {
			if deref(row.ExternalID) == sc.extID {
				return nil
			}
			return e.m.SetExternal(tx, key.Tenant, ticketID, sc.extID, sc.extURL)
		}
		eventID := uuid.Must(uuid.NewV7())
		created, unsubscribed, err := e.m.InsertTicket(tx, key.Tenant, req.Reporter, ticketID, eventID, key.OperationID, req.ticket())
		if err != nil {
			return err
		}
		created.ExternalID, created.ExternalURL = sc.extID, sc.extURL
		if err := e.m.SetExternal(tx, key.Tenant, ticketID, sc.extID, sc.extURL); err != nil {
			return err
		}
		if req.Parent != "" {
			if err := keepParent(tx, e.m, key, created, req.Parent); err != nil {
				return err
			}
		}
		return e.m.Enqueue(tx, tickets.WriteEvent{ID: eventID, Tenant: key.Tenant, Kind: tickets.EventCreated, OperationID: key.OperationID,
			At: created.CreatedAt, Ticket: created, Unsubscribed: unsubscribed})
	})
}

// keepParent makes parentID the parent of t, the ticket the record just
// inserted. The claim checked it, but the tree may have changed while the
// tracker answered (the parent moved under a deeper chain, say): the issue
// exists all the same, so the ticket is recorded without the parent and the
// operation's history says why, rather than leaving the issue unrecorded.
func keepParent(tx *gorm.DB, m tickets.Mirror, key operations.Key, t tickets.Ticket, parentID string) error {
	err := m.SetParent(tx, key.Tenant, t, parentID)
	if errors.Is(err, tickets.ErrInvalid) || errors.Is(err, tickets.ErrNotFound) {
		return addHistory(tx, key, "parent_refused", historyActor, fmt.Sprintf("%s recorded without its parent: %v", t.Key, err))
	}
	return err
}
