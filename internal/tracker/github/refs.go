package github

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/tracker"
)

// FindMarked lists the issues labelled tracker.Label changed since then
// and keeps those whose body carries m's marker text: GitHub's list shows
// an issue as soon as its creation is acknowledged, where its search lags.
func (t *repoTracker) FindMarked(ctx context.Context, m tracker.Mark, since time.Time) ([]tracker.Issue, error) {
	issues, err := t.listLabelled(ctx, tracker.Label, since)
	if err != nil {
		return nil, err
	}
	marker := m.Text()
	var marked []tracker.Issue
	for _, i := range issues {
		if strings.Contains(i.Body, marker) {
			marked = append(marked, i)
		}
	}
	return marked, nil
}

// issueNumber reads an issue's Ref, its number; a Ref that is none is
// never sent.
func issueNumber(ref string) (int, error) {
	n, err := strconv.Atoi(ref)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %q is not a GitHub issue number", tracker.ErrNotSent, ref)
	}
	return n, nil
}

// commentNumber reads a comment's ID; one that is none is never sent.
func commentNumber(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %q is not a GitHub comment ID", tracker.ErrNotSent, id)
	}
	return n, nil
}

// CloseDuplicate says on dup that it duplicates keep, and closes it.
func (t *repoTracker) CloseDuplicate(ctx context.Context, m tracker.Mark, keep, dup tracker.Issue) error {
	if _, err := t.CreateComment(ctx, dup.Ref, tracker.DuplicateNote(m, "#"+keep.Ref)); err != nil {
		return err
	}
	closed := "closed"
	_, err := t.EditIssue(ctx, dup.Ref, tracker.IssueEdit{Status: &closed})
	return err
}

// errNotHeld is what a GitHub issue cannot carry of a ticket: its
// priority and assignee stay on the local row
// (tracker.Backend.HoldsPriorityAndAssignee), and a request that names
// either is refused before it is sent, as Jira refuses a priority it
// cannot map, rather than sent without it.
func errNotHeld(what, field string) error {
	return fmt.Errorf("%s: %w: %w: a GitHub issue holds no ticketd %s; it stays on the ticket", what, tracker.ErrNotSent, tracker.ErrInvalid, field)
}

// Account refuses: ticketd assigns no GitHub issue (errNotHeld).
func (t *repoTracker) Account(context.Context, string) (string, error) {
	return "", errNotHeld("find account", "assignee")
}
