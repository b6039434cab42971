package jira

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/tracker"
)

// The Jira project as tracker.Tracker: what internal/tracked reconciles
// through. An issue's Ref is its key, its Body the text of its
// description, its State its Jira status name, its Priority its Jira
// priority name and its Assignee an account ID; a comment's ID is Jira's.

// PortOpener returns the tracker.Opener of Jira backends, sharing one
// pair of transports and one set of per-host bounds (Opener).
func PortOpener(opts Options) tracker.Opener {
	open := Opener(opts)
	return func(b tracker.Backend) (tracker.Tracker, error) {
		if b.Kind != Kind {
			return nil, fmt.Errorf("%w: backend kind %q is not %q", tracker.ErrMisconfigured, b.Kind, Kind)
		}
		p, err := open(Config{Site: b.Site, ProjectKey: b.ProjectKey, IssueType: b.IssueType, Credential: b.Credential,
			StatusMap: b.StatusMap, PriorityMap: b.PriorityMap, Tenant: b.Tenant})
		if err != nil {
			return nil, err
		}
		return port{p}, nil
	}
}

type port struct{ p *Project }

// ticketLabels are an issue's labels less the operation's marker label
// and the duplicate label, which are ticketd's, not the ticket's.
func ticketLabels(labels []string) []string {
	return slices.DeleteFunc(slices.Clone(labels), func(l string) bool {
		return strings.HasPrefix(l, OpLabelPrefix) || l == DuplicateLabel
	})
}

func toPortIssue(i Issue) tracker.Issue {
	return tracker.Issue{Ref: i.Key, URL: i.URL, Title: i.Title, Body: i.Description, State: i.Status,
		Labels: ticketLabels(i.Labels), Priority: i.Priority, Assignee: i.AccountID, CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt}
}

func toPortComment(c Comment) tracker.Comment {
	return tracker.Comment{ID: strconv.FormatInt(c.ID, 10), Issue: c.Issue, URL: c.URL, Body: c.Body, CreatedAt: c.CreatedAt}
}

// CreateIssue files in, with its priority's priority_map name; its Body
// ends with the marker, which the project's CreateIssue appends itself,
// so it is taken off first.
func (t port) CreateIssue(ctx context.Context, in tracker.NewIssue) (tracker.Issue, error) {
	desc := strings.TrimSuffix(strings.TrimSuffix(in.Body, in.Mark.Text()), "\n\n")
	got, err := t.p.CreateIssue(ctx, NewIssue{Tenant: in.Mark.Tenant, OperationID: in.Mark.OperationID, Title: in.Title,
		Description: desc, Labels: in.Labels, Priority: in.Priority})
	if err != nil {
		return tracker.Issue{}, err
	}
	i := toPortIssue(got)
	i.State = t.p.cfg.StatusMap["open"]
	return i, nil
}

func (t port) GetIssue(ctx context.Context, ref string) (tracker.Issue, error) {
	i, err := t.p.GetIssue(ctx, ref)
	if err != nil {
		return tracker.Issue{}, err
	}
	return toPortIssue(i), nil
}

// FindMarked searches by m's label; since is not needed, the label names
// the operation alone.
func (t port) FindMarked(ctx context.Context, m tracker.Mark, _ time.Time) ([]tracker.Issue, error) {
	found, err := t.p.FindMarked(ctx, m.Tenant, m.OperationID)
	if err != nil {
		return nil, err
	}
	out := make([]tracker.Issue, 0, len(found))
	for _, i := range found {
		out = append(out, toPortIssue(i))
	}
	return out, nil
}

// EditIssue takes the transition to the status, then sets the fields
// (the priority by its priority_map name, the assignee's account) with one
// PUT (labels added and removed against the issue as it is, the markers
// kept), then reads the issue back. Each step is idempotent, so an unknown
// outcome may be sent again.
//
// Errors: as Tracker's; a status with no transition is a
// *NoTransitionError, which is tracker.ErrInvalid, as is a priority the
// project does not map: either refuses the whole edit, nothing sent.
func (t port) EditIssue(ctx context.Context, ref string, edit tracker.IssueEdit) (tracker.Issue, error) {
	e := IssueEdit{Title: edit.Title, Description: edit.Body, Priority: edit.Priority, AccountID: edit.Assignee}
	if edit.Priority != nil {
		if _, err := t.p.priority(*edit.Priority); err != nil {
			return tracker.Issue{}, fmt.Errorf("edit issue: %w", err)
		}
	}
	if edit.Labels != nil {
		cur, err := t.p.GetIssue(ctx, ref)
		if err != nil {
			return tracker.Issue{}, err
		}
		have := ticketLabels(cur.Labels)
		for _, l := range *edit.Labels {
			if !slices.Contains(have, l) {
				e.AddLabels = append(e.AddLabels, l)
			}
		}
		for _, l := range have {
			if !slices.Contains(*edit.Labels, l) {
				e.DelLabels = append(e.DelLabels, l)
			}
		}
	}
	// The transition first: a status the workflow cannot reach refuses
	// the whole edit before anything of it is done.
	if edit.Status != nil {
		if err := t.p.SetStatus(ctx, ref, *edit.Status); err != nil {
			return tracker.Issue{}, err
		}
	}
	if e.Title != nil || e.Description != nil || e.Priority != nil || e.AccountID != nil || len(e.AddLabels)+len(e.DelLabels) > 0 {
		if err := t.p.EditIssue(ctx, ref, e); err != nil {
			return tracker.Issue{}, err
		}
	}
	return t.GetIssue(ctx, ref)
}

func (t port) CreateComment(ctx context.Context, ref, body string) (tracker.Comment, error) {
	c, err := t.p.CreateComment(ctx, ref, body)
	if err != nil {
		return tracker.Comment{}, err
	}
	return toPortComment(c), nil
}

// ListComments lists the issue's comments created at or after since
// (Jira's comments are not edited by ticketd, so created is their change).
func (t port) ListComments(ctx context.Context, ref string, since time.Time) ([]tracker.Comment, error) {
	all, err := t.p.ListComments(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out []tracker.Comment
	for _, c := range all {
		if !c.CreatedAt.Before(since) {
			out = append(out, toPortComment(c))
		}
	}
	return out, nil
}

// errNoComment is a comment ID the issue's comments do not hold: a
// definite answer that it is not there.
var errNoComment = errors.New("the issue has no such comment")

// GetComment finds the comment among the issue's: §22 allows no get of
// one comment, and the list is read consistently.
func (t port) GetComment(ctx context.Context, ref, commentID string) (tracker.Comment, error) {
	all, err := t.p.ListComments(ctx, ref)
	if err != nil {
		return tracker.Comment{}, err
	}
	for _, c := range all {
		if strconv.FormatInt(c.ID, 10) == commentID {
			return toPortComment(c), nil
		}
	}
	return tracker.Comment{}, fmt.Errorf("get comment: %w: %w", tracker.ErrRejected, errNoComment)
}

func (t port) DeleteComment(ctx context.Context, ref, commentID string) error {
	id, err := strconv.ParseInt(commentID, 10, 64)
	if err != nil || id < 1 {
		return fmt.Errorf("delete comment: %w: %q is not a Jira comment ID", tracker.ErrNotSent, commentID)
	}
	return t.p.DeleteComment(ctx, ref, id)
}

// CloseDuplicate says on dup that it duplicates keep, then labels it
// ticketd-duplicate and takes it to the closed status (Project.CloseDuplicate).
func (t port) CloseDuplicate(ctx context.Context, m tracker.Mark, keep, dup tracker.Issue) error {
	if _, err := t.p.CreateComment(ctx, dup.Ref, tracker.DuplicateNote(m, keep.Ref)); err != nil {
		return err
	}
	return t.p.CloseDuplicate(ctx, dup.Ref)
}

// Account is the one active account user search finds for email
// (Project.Account).
func (t port) Account(ctx context.Context, email string) (string, error) {
	return t.p.Account(ctx, email)
}
