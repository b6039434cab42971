package tickets

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/changelog"
	"github.com/ticketd/ticketd/internal/operations"
)

// Approvals is the service's approval gate (nil when nobody is asked), for
// the console's approval pages.
func (s *Service) Approvals() *approval.Gate { return s.approvals }

// gate is the approval step of a write (docs/contract.md#approval), run by the ledger
// between its fast path and its claim; nil without an approval gate.
func (s *Service) gate(key operations.Key, fingerprint, actor string, p approval.Proposal) operations.GateFunc {
	if s.approvals == nil {
		return nil
	}
	return func(ctx context.Context) (operations.WriteFunc, error) {
		return s.approvals.Check(ctx, approval.Target{Key: key, Fingerprint: fingerprint, Subject: actor}, p)
	}
}

// createProposal is what a create would do, as a person approving it reads it.
func createProposal(opID string, n NewTicket) approval.Proposal {
	changes := []approval.FieldChange{{Field: "title", To: n.Title}, {Field: "priority", To: string(n.Priority)}}
	if n.Description != "" {
		changes = append(changes, approval.FieldChange{Field: "description", To: n.Description})
	}
	if len(n.Labels) > 0 {
		changes = append(changes, approval.FieldChange{Field: "labels", To: strings.Join(n.Labels, ", ")})
	}
	where := "in project " + n.ProjectID
	if n.parentKey != "" {
		changes = append(changes, approval.FieldChange{Field: "parent", To: n.parentKey})
		where += ", as a sub-task of " + n.parentKey
	}
	return approval.Proposal{
		Summary: fmt.Sprintf("Create an %s ticket %q %s (operation %s); urgent tickets page on-call.",
			n.Priority, n.Title, where, opID),
		Items:  []approval.Item{{Ticket: "new ticket in " + n.ProjectID, Changes: changes}},
		Urgent: n.Priority == PriorityUrgent,
	}
}

// updateProposal is what an update of the tickets in cur would do, computed
// from the tickets as they are now (the write checks again under lock:
// recheckApproval). It is urgent only when it would make a ticket urgent,
// and a ticket it would leave as it is counts for nothing, so a write that
// changes nothing is never asked about (Policy.Needs). Its summary names
// each field's moves, how many tickets change and the first of their keys.
func updateProposal(action, opID string, cur []Ticket, n TicketUpdate, bulk bool) approval.Proposal {
	p := approval.Proposal{Bulk: bulk}
	var changing []string
	perTicket := make([]Changes, 0, len(cur))
	for _, t := range cur {
		item := approval.Item{Ticket: t.Key}
		_, changes, err := n.applyTo(t)
		if err != nil {
			// The write will refuse it with the same error; show the intent.
			item.Changes = append(item.Changes, approval.FieldChange{Field: "error", To: err.Error()})
		}
		p.Urgent = p.Urgent || makesUrgent(changes)
		perTicket = append(perTicket, changes)
		fields := make([]string, 0, len(changes))
		for f := range changes {
			fields = append(fields, f)
		}
		slices.Sort(fields)
		for _, f := range fields {
			c := changes[f]
			item.Changes = append(item.Changes, approval.FieldChange{Field: f, From: changelog.Text(c.From), To: changelog.Text(c.To)})
		}
		if len(item.Changes) > 0 {
			changing = append(changing, t.Key)
		}
		p.Items = append(p.Items, item)
	}
	p.Summary = proposalSummary(action, opID, changing, len(cur), changelog.Describe(perTicket), p.Urgent)
	return p
}

// proposalSummary is an update proposal in one sentence: "bulk_update_tickets:
// change 12 tickets (OPS-1, …, OPS-5 and 7 more): status open → closed (12)
// (operation …)."
func proposalSummary(action, opID string, changing []string, named int, what string, urgent bool) string {
	if what == "" {
		what = "no field changes"
	}
	tickets := "1 ticket"
	if len(changing) != 1 {
		tickets = fmt.Sprintf("%d tickets", len(changing))
	}
	s := fmt.Sprintf("%s: change %s (%s): %s", action, tickets, listKeys(changing, 5), what)
	if rest := named - len(changing); rest > 0 {
		s += fmt.Sprintf("; %d more named would not change", rest)
	}
	if urgent {
		s += "; urgent pages on-call"
	}
	return fmt.Sprintf("%s (operation %s).", s, opID)
}

// makesUrgent reports whether changes raise a ticket to urgent, which pages
// on-call and so needs a person's yes.
func makesUrgent(changes Changes) bool {
	c, ok := changes["priority"]
	return ok && c.To == string(PriorityUrgent)
}

// errApprovalNowNeeded: the ticket moved between the read the approval
// check was made on and the write's lock, so that the write now needs the
// yes it was not asked for. The write rolled back; the service checks again.
var errApprovalNowNeeded = fmt.Errorf("%w: the ticket changed while the write was checked for approval; retry with the same operation_id", ErrUnavailable)

// recheckApproval runs in a write's transaction, on what it changes under
// lock: when p (the proposal made before the lock) needed no approval but
// the changes do, it refuses (errApprovalNowNeeded) rather than page
// on-call, or change many tickets, without a person's yes.
func (s *Service) recheckApproval(p approval.Proposal, changed []Changes) error {
	if s.approvals == nil || s.approvals.Policy().Needs(p) {
		return nil
	}
	now := approval.Proposal{Bulk: p.Bulk}
	for _, c := range changed {
		now.Urgent = now.Urgent || makesUrgent(c)
		// The policy counts what changes; the fields suffice for that.
		item := approval.Item{}
		for f := range c {
			item.Changes = append(item.Changes, approval.FieldChange{Field: f})
		}
		now.Items = append(now.Items, item)
	}
	if s.approvals.Policy().Needs(now) {
		return errApprovalNowNeeded
	}
	return nil
}

// listKeys names the first keys and counts the rest: "OPS-1, OPS-2 and 7 more".
func listKeys(keys []string, first int) string {
	if len(keys) <= first {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(keys[:first], ", "), len(keys)-first)
}
