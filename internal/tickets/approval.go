package tickets

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/internal/approval"
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
	return approval.Proposal{
		Summary: fmt.Sprintf("Create an %s ticket %q in project %s (operation %s); urgent tickets page on-call.",
			n.Priority, n.Title, n.ProjectID, opID),
		Items:  []approval.Item{{Ticket: "new ticket in " + n.ProjectID, Changes: changes}},
		Urgent: n.Priority == PriorityUrgent,
	}
}

// updateProposal is what an update of the tickets in cur would do, computed
// from the tickets as they are now (the write checks again under lock).
func updateProposal(action, opID string, cur []Ticket, n TicketUpdate, bulk bool) approval.Proposal {
	p := approval.Proposal{Bulk: bulk, Urgent: n.Priority != nil && *n.Priority == PriorityUrgent}
	keys := make([]string, 0, len(cur))
	for _, t := range cur {
		keys = append(keys, t.Key)
		item := approval.Item{Ticket: t.Key}
		_, changes, err := n.applyTo(t)
		if err != nil {
			// The write will refuse it with the same error; show the intent.
			item.Changes = append(item.Changes, approval.FieldChange{Field: "error", To: err.Error()})
		}
		fields := make([]string, 0, len(changes))
		for f := range changes {
			fields = append(fields, f)
		}
		slices.Sort(fields)
		for _, f := range fields {
			c := changes[f]
			item.Changes = append(item.Changes, approval.FieldChange{Field: f, From: changeText(c.From), To: changeText(c.To)})
		}
		p.Items = append(p.Items, item)
	}
	shown := keys
	if len(shown) > 5 {
		shown = append(slices.Clone(keys[:5]), fmt.Sprintf("and %d more", len(keys)-5))
	}
	what := "change"
	if p.Urgent {
		what = "make urgent (pages on-call) and change"
	}
	p.Summary = fmt.Sprintf("%s: %s %d ticket(s): %s (operation %s).", action, what, len(keys), strings.Join(shown, ", "), opID)
	return p
}

// changeText renders one side of a Change for a person: a string, "none"
// (unassigned) or a label list.
func changeText(v any) string {
	switch x := v.(type) {
	case nil:
		return "none"
	case string:
		return x
	case []string:
		if len(x) == 0 {
			return "no labels"
		}
		return strings.Join(x, ", ")
	}
	return fmt.Sprint(v)
}
