package tickets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/people"
)

// ActionUpdateTicket is the ledger action of UpdateTicket.
const ActionUpdateTicket = "update_ticket"

// MaxAssignee is the longest assignee, in characters after trimming.
const MaxAssignee = people.MaxUserID

// AssigneeMe names the caller as assignee, in an update as in a list filter,
// so an agent can assign a ticket to itself without knowing its own subject.
// The service resolves it (resolveMe); no transport needs to know the rule.
const AssigneeMe = people.Me

// resolveMe returns assignee with AssigneeMe replaced by the caller's
// subject; nil stays nil.
func resolveMe(assignee *string, subject string) *string {
	if assignee == nil || *assignee != AssigneeMe {
		return assignee
	}
	return &subject
}

// ErrVersionConflict: the ticket is not at the version the caller expected.
// Nothing was written and nothing recorded: re-read the ticket and decide
// again (the same operation ID stays usable). *VersionConflictError carries
// the current state.
var ErrVersionConflict = errors.New("version conflict")

// VersionConflictError is the ErrVersionConflict of one update: the version
// the caller expected and the ticket as it is.
type VersionConflictError struct {
	Expected int64
	Current  Ticket
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("version conflict: ticket %s is at version %d, not %d", e.Current.Key, e.Current.Version, e.Expected)
}

// Is makes errors.Is(err, ErrVersionConflict) true.
func (e *VersionConflictError) Is(target error) bool { return target == ErrVersionConflict }

// moves lists the status moves a ticket may make (docs/contract.md#tickets).
var moves = map[Status][]Status{
	StatusOpen:       {StatusInProgress, StatusResolved, StatusClosed},
	StatusInProgress: {StatusOpen, StatusResolved, StatusClosed},
	StatusResolved:   {StatusOpen, StatusClosed},
	StatusClosed:     {StatusOpen},
}

// AllowedMoves returns the statuses a ticket in status from may move to.
func AllowedMoves(from Status) []Status { return slices.Clone(moves[from]) }

// TicketUpdate is the caller's intent for update_ticket. Nil fields stay as
// they are; at least one field must be given.
type TicketUpdate struct {
	// IfVersion, when set, makes the update apply only to that version of
	// the ticket; otherwise ErrVersionConflict.
	IfVersion    *int64
	Title        *string
	Description  *string
	Priority     *Priority
	Status       *Status
	Assignee     *string // "" unassigns
	AddLabels    []string
	RemoveLabels []string
	Parent       *string // a ticket (UUID or key; resolved to the UUID), "" detaches
}

// normalizeUpdate validates an update and returns its canonical form: text
// trimmed and composed, priority and status lower-cased, labels normalised
// like create's, sorted and distinct (nil when none).
func normalizeUpdate(in TicketUpdate) (TicketUpdate, error) {
	var (
		out  TicketUpdate
		errs []FieldError
	)
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	text := func(field string, s *string, maxLen int, required bool) *string {
		if s == nil {
			return nil
		}
		if msg := checkText(*s); msg != "" {
			bad(field, "%s", msg)
			return nil
		}
		v := canonicalText(*s, false)
		switch n := utf8.RuneCountInString(v); {
		case required && n == 0:
			bad(field, "must not be blank")
		case n > maxLen:
			bad(field, "must be at most %d characters after trimming, got %d", maxLen, n)
		}
		return &v
	}
	if in.IfVersion != nil {
		if *in.IfVersion < 1 {
			bad("if_version", "must be a version number of at least 1, got %d", *in.IfVersion)
		}
		v := *in.IfVersion
		out.IfVersion = &v
	}
	out.Title = text("title", in.Title, MaxTitle, true)
	out.Description = text("description", in.Description, MaxDescription, false)
	out.Assignee = text("assignee", in.Assignee, MaxAssignee, false)
	out.Parent = text("parent", in.Parent, maxParentRef, false)
	if in.Priority != nil {
		p := Priority(strings.ToLower(strings.TrimSpace(string(*in.Priority))))
		if !slices.Contains(Priorities, p) {
			bad("priority", "must be one of low, normal, high, urgent; got %q", *in.Priority)
		}
		out.Priority = &p
	}
	if in.Status != nil {
		st := Status(strings.ToLower(strings.TrimSpace(string(*in.Status))))
		if !slices.Contains(Statuses, st) {
			bad("status", "must be one of open, in_progress, resolved, closed; got %q", *in.Status)
		}
		out.Status = &st
	}
	out.AddLabels = normalizeLabels("add_labels", in.AddLabels, bad)
	out.RemoveLabels = normalizeLabels("remove_labels", in.RemoveLabels, bad)
	for _, l := range out.AddLabels {
		if slices.Contains(out.RemoveLabels, l) {
			bad("remove_labels", "label %q is also in add_labels; say one or the other", l)
		}
	}
	if out.Title == nil && out.Description == nil && out.Priority == nil && out.Status == nil && out.Assignee == nil && in.Parent == nil &&
		len(out.AddLabels) == 0 && len(out.RemoveLabels) == 0 && len(errs) == 0 {
		bad("update", "nothing to change: give at least one of title, description, priority, status, assignee, add_labels, remove_labels, parent")
	}
	if len(errs) > 0 {
		return TicketUpdate{}, &ValidationError{Fields: errs}
	}
	return out, nil
}

// updateFingerprint identifies an update_ticket intent: the resolved ticket
// and the normalised update, so "SUP-7" and its UUID are the same input.
// if_version is a precondition, not part of the intent: a caller that lost
// the reply, re-read the ticket (now at the version its own change made) and
// retried with the new version gets its recorded change back, not a conflict.
func updateFingerprint(ticketID uuid.UUID, n TicketUpdate) string {
	canonical, err := json.Marshal(struct {
		TicketID     string    `json:"ticket_id"`
		Title        *string   `json:"title,omitempty"`
		Description  *string   `json:"description,omitempty"`
		Priority     *Priority `json:"priority,omitempty"`
		Status       *Status   `json:"status,omitempty"`
		Assignee     *string   `json:"assignee,omitempty"`
		AddLabels    []string  `json:"add_labels,omitempty"`
		RemoveLabels []string  `json:"remove_labels,omitempty"`
		Parent       *string   `json:"parent,omitempty"`
	}{ticketID.String(), n.Title, n.Description, n.Priority, n.Status, n.Assignee, n.AddLabels, n.RemoveLabels, n.Parent})
	if err != nil {
		panic(fmt.Sprintf("marshal fingerprint input: %v", err)) // strings and numbers only: cannot fail
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// UpdateResult is the outcome of UpdateTicket.
type UpdateResult struct {
	OperationID uuid.UUID
	// Version is the version this operation produced and Changes what it
	// changed; on a replay both are the original operation's.
	Version int64
	Changes Changes
	// Ticket is the ticket as it is now, which after a replay may be later
	// than Version.
	Ticket   Ticket
	Replayed bool
}

// UpdateTicket applies one update per (tenant, operation ID) to the tenant's
// ticket (UUID or key, any case). A change bumps the version by one; an
// update that changes nothing succeeds with no changes and keeps the
// version. The change, its `updated` event and the operation record commit
// in one transaction; a retry with the same ID and input answers the
// original version and changes with Replayed set and never applies them
// again, even after later updates. Concurrent updates of one ticket take
// turns, so with the same IfVersion exactly one succeeds.
//
// Errors: ErrInvalid (bad reference or update, or a status move the
// ticket may not make; nothing recorded), ErrNotFound, ErrVersionConflict
// (*VersionConflictError; nothing recorded), operations.ErrConflict,
// operations.ErrInProgress, operations.ErrOutcomeUnknown, ErrUnavailable,
// operations.ErrUnavailable.
func (s *Service) UpdateTicket(ctx context.Context, c Caller, opID operations.ID, ticketRef string, in TicketUpdate) (result UpdateResult, err error) {
	defer func() { s.report(ActionUpdateTicket, result.Replayed, err) }()
	if err := requireID(opID); err != nil {
		return UpdateResult{}, err
	}
	tenant, actor, id := c.Tenant, c.Subject, opID.UUID()
	n, err := normalizeUpdate(in)
	if err != nil {
		return UpdateResult{OperationID: id}, err
	}
	if err := checkActor(actor); err != nil {
		return UpdateResult{OperationID: id}, err
	}
	// Resolved before fingerprinting: "me" and the caller's own subject are
	// the same intent.
	n.Assignee = resolveMe(n.Assignee, actor)
	if err := s.checkAssignee(ctx, c, operations.Key{Tenant: tenant, Action: ActionUpdateTicket, OperationID: id}, n.Assignee); err != nil {
		return UpdateResult{OperationID: id}, err
	}
	t, err := s.GetTicket(ctx, tenant, ticketRef)
	if err != nil {
		return UpdateResult{OperationID: id}, fmt.Errorf("update ticket: %w", err)
	}
	if n.Parent, err = s.resolveParent(ctx, tenant, n.Parent); err != nil {
		return UpdateResult{OperationID: id}, err
	}
	b, err := s.backendOf(ctx, tenant, t.ProjectID)
	if err != nil {
		return UpdateResult{OperationID: id}, fmt.Errorf("update ticket: %w", err)
	}
	res, err := b.UpdateTicket(ctx, Write{Tenant: tenant, Actor: actor, ID: id}, t, n)
	if errors.Is(err, errApprovalNowNeeded) {
		// The ticket moved under the approval check: check again on it as it is.
		if t, err = s.GetTicket(ctx, tenant, ticketRef); err != nil {
			return UpdateResult{OperationID: id}, fmt.Errorf("update ticket: %w", err)
		}
		res, err = b.UpdateTicket(ctx, Write{Tenant: tenant, Actor: actor, ID: id}, t, n)
	}
	return res, err
}

// updateLocal is UpdateTicket of a ticket of a local project.
func (s *Service) updateLocal(ctx context.Context, w Write, t Ticket, n TicketUpdate) (_ UpdateResult, err error) {
	tenant, actor, id := w.Tenant, w.Actor, w.ID
	key := operations.Key{Tenant: tenant, Action: ActionUpdateTicket, OperationID: id}
	eventID := uuid.Must(uuid.NewV7())
	res := UpdateResult{OperationID: id}
	fp := updateFingerprint(t.ID, n)
	proposal := updateProposal(ActionUpdateTicket, id.String(), []Ticket{t}, n, false)
	gate := s.gate(key, fp, actor, proposal)
	var recorded eventRow
	replay := operations.Replay{Join: eventResult, Into: recorded.replayColumns()}
	out, err := s.ledger.RunFolded(ctx, key, fp, eventID.String(), gate, replay, func(tx *gorm.DB, claim *operations.Fold) error {
		row, unsubscribed, err := s.lockTicketClaiming(tx, claim, tenant, t.ID)
		if err != nil || !claim.Won() {
			return err
		}
		res.Ticket, res.Changes, err = writeUpdate(tx, row, tenant, actor, id, eventID, n)
		res.Version = res.Ticket.Version
		if err == nil {
			err = s.recheckApproval(proposal, []Changes{res.Changes})
		}
		if err != nil {
			return err
		}
		return s.enqueue(tx, WriteEvent{ID: eventID, Tenant: tenant, Kind: EventUpdated, OperationID: id,
			At: res.Ticket.UpdatedAt, Ticket: res.Ticket, Changes: res.Changes, Unsubscribed: unsubscribed})
	})
	if err != nil {
		return UpdateResult{OperationID: id}, fmt.Errorf("update ticket %s: %w", t.Key, err)
	}
	if !out.Replayed {
		return res, nil
	}
	var ev Event
	if out.ResultRead {
		ev, err = recorded.replayed()
	} else {
		ev, err = s.eventByID(ctx, tenant, out.Record.ResultID)
	}
	if err != nil {
		return UpdateResult{OperationID: id}, fmt.Errorf("update ticket: read committed event: %w", err)
	}
	// The ticket as read before the ledger is "now" when it is at or past
	// the recorded version: versions grow in commit order, so it cannot
	// predate the operation's commit. Otherwise the operation committed
	// after that read (a concurrent first call), so read the ticket again.
	now := t
	if ev.TicketID != t.ID || t.Version < ev.Version {
		if now, err = s.ticketByID(ctx, tenant, ev.TicketID.String()); err != nil {
			return UpdateResult{OperationID: id}, fmt.Errorf("update ticket: read ticket: %w", err)
		}
	}
	return UpdateResult{OperationID: id, Version: ev.Version, Changes: ev.Changes, Ticket: now, Replayed: true}, nil
}

// applyTo returns the ticket after the update and what changed. A field set
// to its current value is no change; a status move the ticket may not make
// is invalid, naming the moves it may.
func (n TicketUpdate) applyTo(cur Ticket) (Ticket, Changes, error) {
	next := cur
	next.Labels = slices.Clone(cur.Labels)
	changes := Changes{}
	set := func(field string, from, to string, apply func()) {
		if from != to {
			changes[field] = Change{From: from, To: to}
			apply()
		}
	}
	if n.Title != nil {
		set("title", cur.Title, *n.Title, func() { next.Title = *n.Title })
	}
	if n.Description != nil {
		set("description", cur.Description, *n.Description, func() { next.Description = *n.Description })
	}
	if n.Priority != nil {
		set("priority", string(cur.Priority), string(*n.Priority), func() { next.Priority = *n.Priority })
	}
	if n.Status != nil && *n.Status != cur.Status {
		allowed := AllowedMoves(cur.Status)
		if !slices.Contains(allowed, *n.Status) {
			names := make([]string, len(allowed))
			for i, st := range allowed {
				names[i] = string(st)
			}
			return Ticket{}, nil, invalidField("status", "a %s ticket cannot move to %s; allowed moves from %s: %s",
				cur.Status, *n.Status, cur.Status, strings.Join(names, ", "))
		}
		set("status", string(cur.Status), string(*n.Status), func() { next.Status = *n.Status })
	}
	if n.Assignee != nil && *n.Assignee != cur.Assignee {
		changes["assignee"] = Change{From: nullable(cur.Assignee), To: nullable(*n.Assignee)}
		next.Assignee = *n.Assignee
	}
	labels := slices.DeleteFunc(slices.Clone(cur.Labels), func(l string) bool { return slices.Contains(n.RemoveLabels, l) })
	labels = append(labels, n.AddLabels...)
	slices.Sort(labels)
	labels = slices.Compact(labels)
	if !slices.Equal(labels, cur.Labels) {
		if len(labels) > MaxLabels {
			return Ticket{}, nil, invalidField("add_labels", "the ticket would have %d labels; at most %d (remove some first)", len(labels), MaxLabels)
		}
		changes["labels"] = Change{From: slices.Clone(cur.Labels), To: slices.Clone(labels)}
		next.Labels = labels
	}
	return next, changes, nil
}

// nullable is an assignee as a change shows it: nil when unassigned.
func nullable(assignee string) any {
	if assignee == "" {
		return nil
	}
	return assignee
}

// checkActor rejects a subject no column can hold: tokens are verified
// upstream, but the service must not trust its callers' strings blindly.
func checkActor(actor string) error {
	if msg := checkText(actor); msg != "" || actor == "" {
		return invalidField("actor", "the token's subject must be non-empty UTF-8 text without NUL")
	}
	return nil
}
