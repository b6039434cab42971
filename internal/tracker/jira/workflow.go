package jira

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/ticketd/ticketd/internal/tracker"
)

// NoTransitionError: the project's workflow has no transition from where
// the issue is to the status asked for; nothing was changed. Available
// names the transitions there are, as "Name → Status".
type NoTransitionError struct {
	Status    string // the Jira status asked for
	From      string // the issue's status
	Available []string
}

func (e *NoTransitionError) Error() string {
	avail := "none"
	if len(e.Available) > 0 {
		avail = strings.Join(e.Available, ", ")
	}
	return fmt.Sprintf("%s: %s: the workflow has no transition from %q to %q; available: %s",
		tracker.ErrNotSent, ErrInvalid, e.From, e.Status, avail)
}

// Is makes a NoTransitionError both ErrInvalid and tracker.ErrNotSent.
func (e *NoTransitionError) Is(target error) bool {
	return target == ErrInvalid || target == tracker.ErrNotSent
}

// maxNamed bounds the transitions a NoTransitionError names, and
// maxNameLen each name: the names are the tracker's, shown to a tenant.
const (
	maxNamed   = 20
	maxNameLen = 80
)

type transitionJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	To   struct {
		Name string `json:"name"`
	} `json:"to"`
}

// SetStatus moves issue key to the Jira status ticketd's status maps to
// (status_map), through the one transition of the workflow that leads
// there from where the issue is; an issue already there is left alone, so
// a retry of an unknown outcome may call it again.
//
// Errors: the classes of tracker.Tracker; ErrInvalid (not sent) for a
// status the project does not map, and *NoTransitionError.
func (p *Project) SetStatus(ctx context.Context, key, ticketStatus string) error {
	target, ok := p.cfg.StatusMap[ticketStatus]
	if !ok {
		return fmt.Errorf("set status: %w: %w: status %q has no Jira status (status_map)", tracker.ErrNotSent, ErrInvalid, ticketStatus)
	}
	return p.moveTo(ctx, key, target)
}

func (p *Project) moveTo(ctx context.Context, key, target string) error {
	var issue struct {
		Fields struct {
			Status struct {
				Name string `json:"name"`
			} `json:"status"`
		} `json:"fields"`
	}
	path, err := issuePath(key)
	if err != nil {
		return fmt.Errorf("set status: %w", err)
	}
	if err := p.call(ctx, "get issue", http.MethodGet, path, url.Values{"fields": {"status"}}, nil, &issue); err != nil {
		return err
	}
	from := issue.Fields.Status.Name
	if strings.EqualFold(from, target) {
		return nil
	}
	var list struct {
		Transitions []transitionJSON `json:"transitions"`
	}
	if err := p.call(ctx, "list transitions", http.MethodGet, path+"/transitions", nil, nil, &list); err != nil {
		return err
	}
	var avail []string
	for _, t := range list.Transitions {
		if strings.EqualFold(t.To.Name, target) {
			body := map[string]any{"transition": map[string]string{"id": t.ID}}
			return p.call(ctx, "transition issue", http.MethodPost, path+"/transitions", nil, body, nil)
		}
		if len(avail) < maxNamed {
			avail = append(avail, clip(t.Name)+" → "+clip(t.To.Name))
		}
	}
	return fmt.Errorf("set status: %w", &NoTransitionError{Status: target, From: clip(from), Available: avail})
}

func clip(s string) string {
	if r := []rune(s); len(r) > maxNameLen {
		return string(r[:maxNameLen]) + "…"
	}
	return s
}

// CloseDuplicate closes issue key as a duplicate ticketd found: it labels
// it ticketd-duplicate and moves it to the status ticketd's closed maps to.
// Both steps are idempotent, so a retry may run it again.
func (p *Project) CloseDuplicate(ctx context.Context, key string) error {
	if err := p.EditIssue(ctx, key, IssueEdit{AddLabels: []string{DuplicateLabel}}); err != nil {
		return fmt.Errorf("close duplicate: %w", err)
	}
	if err := p.SetStatus(ctx, key, "closed"); err != nil {
		return fmt.Errorf("close duplicate: %w", err)
	}
	return nil
}

// ErrNoAccount is wrapped, with ErrInvalid and tracker.ErrNotSent, when an
// assignee names no one account of the site.
var ErrNoAccount = errors.New("the assignee is no one account of the Jira site")

// Account is the account ID of the one active user of the site that user
// search finds for assignee (an email address or a name); none or several
// is ErrNoAccount: ticketd never guesses whom to assign. For an address, a
// user showing another address is not a match (Jira matches prefixes),
// and one showing it exactly is the one, whatever else matched.
func (p *Project) Account(ctx context.Context, assignee string) (string, error) {
	var users []struct {
		AccountID string `json:"accountId"`
		Email     string `json:"emailAddress"`
		Active    *bool  `json:"active"`
	}
	q := url.Values{"query": {assignee}, "maxResults": {"10"}}
	if err := p.call(ctx, "search users", http.MethodGet, "/rest/api/3/user/search", q, nil, &users); err != nil {
		return "", err
	}
	byAddress := strings.Contains(assignee, "@")
	var found []string
	for _, u := range users {
		switch {
		case u.AccountID == "" || (u.Active != nil && !*u.Active):
		case strings.EqualFold(u.Email, assignee):
			return u.AccountID, nil
		case byAddress && u.Email != "":
			// Another person's address: Jira hides an address only by the
			// user's choice, and a shown one that differs is not them.
		default:
			found = append(found, u.AccountID)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("search users: %w: %w: %w (%d match)", tracker.ErrNotSent, ErrInvalid, ErrNoAccount, len(found))
	}
	return found[0], nil
}
