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

// update_ticket on a tracker-backed ticket. The fields the issue holds
// (title, description, status, labels; on Jira priority and assignee too)
// are set there with one edit; on GitHub priority and assignee have no
// counterpart and live on the local row alone, so an update that changes
// only those is a local write. A Jira assignee is the account found by the
// user's email before the edit is claimed (accountOf). A PATCH sets fields to values, so sending it twice leaves the
// issue as sending it once: that makes a re-send safe in effect, but not
// blind. Before any re-send the issue is read back: if it shows every field
// of the edit, the edit is recorded as done (that the issue is in the
// intended state is proven; which request put it there is not, and is not
// claimed); if it changed after the request was sent and does not show the
// edit, someone else may have changed it since, and a re-send could undo
// their change, so the operation is left unknown for an operator.
// Tracker-backed edits of one ticket take turns: a second waits until the
// first settles, so an edit re-sent late can never overtake a later one.

// editRequest is what a tracker-backed update sends, and what the local
// row will mirror.
type editRequest struct {
	TicketID string               `json:"ticket_id"`
	Issue    issueRef             `json:"issue"`
	Actor    string               `json:"actor"`
	EventID  string               `json:"event_id"`
	Update   tickets.TicketUpdate `json:"update"` // IfVersion cleared: checked at the claim
	Edit     tracker.IssueEdit    `json:"edit"`
}

// issueEdit is the PATCH that takes an issue mirroring cur to next, and
// whether it sets anything; createMarker is kept in a new body.
func issueEdit(b tracker.Backend, cur, next tickets.Ticket, createMarker string) (tracker.IssueEdit, bool) {
	var e tracker.IssueEdit
	if next.Title != cur.Title {
		e.Title = &next.Title
	}
	if next.Description != cur.Description {
		b := issueBody(next.Description, createMarker)
		e.Body = &b
	}
	if b.StatusName(string(next.Status)) != b.StatusName(string(cur.Status)) {
		st := string(next.Status)
		e.Status = &st
	}
	if !slices.Equal(next.Labels, cur.Labels) {
		l := append([]string{tracker.Label}, next.Labels...)
		e.Labels = &l
	}
	if b.HoldsPriorityAndAssignee() {
		if next.Priority != cur.Priority {
			p := string(next.Priority)
			e.Priority = &p
		}
		if next.Assignee != cur.Assignee {
			e.Assignee = &next.Assignee // the user: claimEdit puts their account in its place
		}
	}
	return e, e.Title != nil || e.Body != nil || e.Status != nil || e.Labels != nil || e.Priority != nil || e.Assignee != nil
}

// shows reports whether issue has every field edit sets.
func shows(b tracker.Backend, issue tracker.Issue, edit tracker.IssueEdit) bool {
	sameSet := func(a, b []string) bool {
		a, b = slices.Clone(a), slices.Clone(b)
		slices.Sort(a)
		slices.Sort(b)
		return slices.Equal(slices.Compact(a), slices.Compact(b))
	}
	return (edit.Title == nil || *edit.Title == issue.Title) && (edit.Body == nil || *edit.Body == issue.Body) &&
		(edit.Status == nil || b.StatusName(*edit.Status) == issue.State) && (edit.Labels == nil || sameSet(*edit.Labels, issue.Labels)) &&
		(edit.Priority == nil || b.PriorityName(*edit.Priority) == issue.Priority) && (edit.Assignee == nil || *edit.Assignee == issue.Assignee)
}

// updateTracked is UpdateTicket on a tracker-backed ticket t; handled is
// false when the local write should do it (nothing the issue holds
// changes, or the ID's record is a local write's). A parent is kept in
// ticketd, so a parent-only update is a local write; one that moves the
// parent and edits the issue is refused before anything is recorded. Were
// the move made in the record, after the tracker answered, a move the tree
// no longer allowed by then (a concurrent move closing a cycle) would leave
// an edit that happened with a move that did not, and one operation could
// succeed only in part; two calls each succeed or fail whole.
func (e *Engine) updateTracked(ctx context.Context, b tracker.Backend, tenant, actor string, id uuid.UUID, t tickets.Ticket, n tickets.TicketUpdate) (res tickets.UpdateResult, handled bool, err error) {
	key := operations.Key{Tenant: tenant, Action: tickets.ActionUpdateTicket, OperationID: id}
	res = tickets.UpdateResult{OperationID: id}
	switch _, err := e.m.Ledger().Lookup(ctx, key); {
	case err == nil:
		if _, err := e.downstream(ctx, key); errors.Is(err, gorm.ErrRecordNotFound) {
			return res, false, nil
		}
	case !errors.Is(err, operations.ErrNotFound):
		return res, true, fmt.Errorf("update ticket %s: %w", t.Key, err)
	default:
		next, err := e.m.Apply(n, t)
		if err != nil {
			return res, false, nil // the local write refuses it the same way
		}
		if _, ok := issueEdit(b, t, next, ""); !ok {
			return res, false, nil
		}
		if n.Parent != nil {
			return res, true, invalidField("parent", "%s mirrors %s: its parent is kept in ticketd, the other fields are sent to the tracker, "+
				"and one update cannot be both; nothing was written: send parent alone in one update_ticket and the other fields in another", t.Key, t.ExternalID)
		}
	}
	fp := e.m.UpdateFingerprint(t.ID, n)
	rec, replayed, err := e.trackedCall(ctx, key, fp, func() (operations.Outcome, error) {
		return e.claimEdit(ctx, b, key, fp, actor, t, n)
	})
	if err != nil {
		return res, true, fmt.Errorf("update ticket %s: %w", t.Key, err)
	}
	ev, err := e.m.Event(ctx, tenant, rec.ResultID)
	if err != nil {
		return res, true, fmt.Errorf("update ticket: read committed event: %w", err)
	}
	now, err := e.m.Ticket(ctx, tenant, ev.TicketID.String())
	if err != nil {
		return res, true, fmt.Errorf("update ticket: read ticket: %w", err)
	}
	return tickets.UpdateResult{OperationID: id, Version: ev.Version, Changes: ev.Changes, Ticket: now, Replayed: replayed}, true, nil
}

// claimEdit claims a tracker-backed update: it finds a new assignee's
// account first (accountOf), then under the ticket's lock it checks the
// expected version, computes the edit from the ticket as committed, and
// refuses while another edit of the ticket is unsettled.
func (e *Engine) claimEdit(ctx context.Context, b tracker.Backend, key operations.Key, fp, actor string, t tickets.Ticket, n tickets.TicketUpdate) (operations.Outcome, error) {
	issue, err := e.ticketIssue(b, t)
	if err != nil {
		return operations.Outcome{}, err
	}
	account, err := e.accountOf(ctx, b, key.Tenant, t, n.Assignee)
	if err != nil {
		return operations.Outcome{}, err
	}
	var consume operations.WriteFunc
	if gate := e.m.UpdateGate(key, fp, actor, t, n); gate != nil {
		if consume, err = gate(ctx); err != nil {
			return operations.Outcome{}, err
		}
	}
	eventID := uuid.Must(uuid.NewV7())
	row := downstreamRow{System: b.Kind, ProjectID: t.ProjectID, TicketID: t.ID.String()}
	return e.claimTracked(ctx, key, fp, eventID.String(), actor, row, func(tx *gorm.DB, row *downstreamRow) error {
		if consume != nil {
			if err := consume(tx); err != nil {
				return err
			}
		}
		cur, createdBy, err := e.m.LockTicket(tx, key.Tenant, t.ID)
		if err != nil {
			return err
		}
		if n.IfVersion != nil && *n.IfVersion != cur.Version {
			return &tickets.VersionConflictError{Expected: *n.IfVersion, Current: cur}
		}
		next, err := e.m.Apply(n, cur)
		if err != nil {
			return err
		}
		var busy []downstreamRow
		err = tx.Where("tenant_id = ? AND action = ? AND ticket_id = ? AND status IN ?", key.Tenant, tickets.ActionUpdateTicket, t.ID.String(),
			[]string{tickets.DownstreamPending, tickets.DownstreamUnknown}).Limit(1).Find(&busy).Error
		switch {
		case err != nil:
			return fmt.Errorf("%w: look for unsettled edits: %v", tickets.ErrUnavailable, err)
		case len(busy) > 0:
			return fmt.Errorf("%w: an earlier update of %s (operation %s) is still being carried to the tracker; "+
				"nothing was recorded for this one: retry it once that settles", operations.ErrInProgress, t.Key, busy[0].OperationID)
		}
		edit, _ := issueEdit(b, cur, next, tracker.Marker(key.Tenant, createdBy))
		if edit.Assignee != nil && *edit.Assignee != "" {
			if account == "" {
				// t had this assignee already, so no account was looked
				// up; it was reassigned since, and this would move it back.
				return fmt.Errorf("%w: %s was reassigned while this update was checked; nothing was recorded: retry it", tickets.ErrUnavailable, t.Key)
			}
			edit.Assignee = &account
		}
		u := n
		u.IfVersion = nil
		raw, err := json.Marshal(editRequest{TicketID: t.ID.String(), Issue: issue, Actor: actor, EventID: eventID.String(), Update: u, Edit: edit})
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		row.Request = string(raw)
		return nil
	})
}

// workEdit is one round of an update: read the issue back once a request
// may have been sent, and send again only when it does not show the edit
// after the settle window and nobody changed it since.
func (e *Engine) workEdit(ctx context.Context, key operations.Key, row downstreamRow, t tracker.Tracker, b tracker.Backend) error {
	var req editRequest
	if err := json.Unmarshal([]byte(row.Request), &req); err != nil {
		return fmt.Errorf("operation %s: bad stored request: %w", key, err)
	}
	if row.Status == tickets.DownstreamSucceeded {
		return e.release(ctx, key, row, nil) // an edit makes nothing that could be doubled
	}
	if row.Attempts > 0 {
		issue, err := t.GetIssue(ctx, string(req.Issue))
		if err != nil {
			return e.lookFailed(ctx, key, row, fmt.Errorf("read issue %s: %w", b.ExternalID(string(req.Issue)), err))
		}
		if shows(b, issue, req.Edit) {
			e.count(ReconcileFound)
			rctx, cancel := detach(ctx)
			defer cancel()
			return e.succeedEdit(rctx, key, row, b, req, issue, success{how: "found", actor: historyActor,
				note: "the issue shows every field of the edit (which request set them is not known)"})
		}
		if settled := row.LastSentAt.Add(e.opts.Settle); time.Now().Before(settled) {
			return e.wait(ctx, key, row, settled, "the issue does not show the edit")
		}
		if !issue.UpdatedAt.Before(row.LastSentAt.Truncate(time.Second)) {
			e.count(ReconcileHeld)
			return e.hold(ctx, key, row, fmt.Sprintf("issue %s changed at %s, after the edit was sent, and does not show it: "+
				"ticketd will not re-send over what may be someone else's later change; resolve the operation",
				b.ExternalID(string(req.Issue)), issue.UpdatedAt.UTC().Format(time.RFC3339)))
		}
		e.count(ReconcileResent)
	}
	if err := e.attempt(ctx, key, &row, fmt.Sprintf("edit %s", b.ExternalID(string(req.Issue)))); err != nil {
		return err
	}
	issue, sendErr := t.EditIssue(ctx, string(req.Issue), req.Edit)
	return e.answered(ctx, key, row, sendErr, func(ctx context.Context) error {
		return e.succeedEdit(ctx, key, row, b, req, issue, success{how: "edited", actor: historyActor})
	})
}

// succeedEdit records the edit as done: the local row takes the update
// (next version, its event and webhook) in one transaction with the
// record's move to succeeded.
func (e *Engine) succeedEdit(ctx context.Context, key operations.Key, row downstreamRow, b tracker.Backend, req editRequest, issue tracker.Issue, sc success) error {
	ids, err := parseUUIDs(req.TicketID, req.EventID)
	if err != nil {
		return fmt.Errorf("operation %s: bad stored IDs: %w", key, err)
	}
	sc.extID, sc.extURL, sc.resultID = b.ExternalID(issue.Ref), issue.URL, req.EventID
	return e.settleSuccess(ctx, key, row, sc, func(tx *gorm.DB, first bool) error {
		if !first {
			return nil
		}
		next, changes, err := e.m.ApplyUpdate(tx, key.Tenant, req.Actor, key.OperationID, ids[1], ids[0], req.Update)
		if err != nil {
			return err
		}
		if len(changes) == 0 {
			return nil
		}
		return e.m.Enqueue(tx, tickets.WriteEvent{ID: ids[1], Tenant: key.Tenant, Kind: tickets.EventUpdated, OperationID: key.OperationID,
			At: next.UpdatedAt, Ticket: next, Changes: changes})
	})
}
