package tracked

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/jira"
)

// Engine is the tickets.Trackers of one Service: the backends of its
// tracker-backed projects and the operator's reconciliation of their
// operations.
type Engine struct {
	m     tickets.Mirror
	opts  Options
	index *indexWatch
}

// Connect returns the Engine that writes through m (tickets.Connector).
func (o Options) Connect(m tickets.Mirror) tickets.Trackers {
	return &Engine{m: m, opts: o.withDefaults(), index: &indexWatch{}}
}

// project is the tickets.Backend of one tracker-backed project.
type project struct {
	e *Engine
	b tracker.Backend
}

// Backend returns the backend of a project stored with b.
func (e *Engine) Backend(b tracker.Backend) tickets.Backend { return project{e: e, b: b} }

func (p project) CreateTicket(ctx context.Context, w tickets.Write, n tickets.NewTicket) (tickets.CreateResult, error) {
	if err := p.e.usable(n.ProjectID, &p.b); err != nil {
		return tickets.CreateResult{OperationID: w.ID}, fmt.Errorf("create ticket: %w", err)
	}
	return p.e.createTracked(ctx, p.b, w.Tenant, w.Actor, w.ID, n)
}

// UpdateTicket edits the issue; an update that changes nothing the issue
// holds (priority, assignee) is the local store's write.
func (p project) UpdateTicket(ctx context.Context, w tickets.Write, t tickets.Ticket, n tickets.TicketUpdate) (tickets.UpdateResult, error) {
	if res, handled, err := p.e.updateTracked(ctx, p.b, w.Tenant, w.Actor, w.ID, t, n); handled {
		return res, err
	}
	return p.e.m.Local().UpdateTicket(ctx, w, t, n)
}

func (p project) AddComment(ctx context.Context, w tickets.Write, t tickets.Ticket, body string) (tickets.CommentResult, error) {
	return p.e.commentTracked(ctx, p.b, w.Tenant, w.Actor, w.ID, t, body)
}

var repositoryPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$`)

// CheckBackend validates (and trims, in place) a tracker backend. The
// token itself is never given, nor the variable that holds it: the backend
// names a credential the operator declared for the tenant, and its API URL
// or site must pass the tracker endpoint policy (Options.Guard).
func (e *Engine) CheckBackend(ctx context.Context, tenant string, b *tracker.Backend) []tickets.FieldError {
	b.Kind, b.Credential = strings.TrimSpace(b.Kind), strings.TrimSpace(b.Credential)
	if e.opts.Open == nil {
		return []tickets.FieldError{{Field: "backend", Message: "this server has no tracker connector configured"}}
	}
	var errs []tickets.FieldError
	add := func(field, msg string) { errs = append(errs, tickets.FieldError{Field: field, Message: msg}) }
	switch b.Kind {
	case tracker.KindGitHub:
		e.checkGitHub(ctx, b, add)
	case tracker.KindJira:
		e.checkJira(ctx, b, add)
	default:
		add("backend.kind", fmt.Sprintf("must be %q or %q", tracker.KindGitHub, tracker.KindJira))
	}
	if _, ok := e.opts.Credentials.For(b.Credential, tenant); !ok {
		add("backend.credential", credentialHint(e.opts.Credentials.Names(tenant)))
	}
	return errs
}

func (e *Engine) checkGitHub(ctx context.Context, b *tracker.Backend, add func(field, msg string)) {
	b.Repository, b.APIURL = strings.TrimSpace(b.Repository), strings.TrimSpace(b.APIURL)
	if b.Site != "" || b.ProjectKey != "" || b.IssueType != "" || b.StatusMap != nil || b.PriorityMap != nil {
		add("backend", "site, project_key, issue_type, status_map and priority_map are a jira backend's; a github backend has repository and api_url")
	}
	if !repositoryPattern.MatchString(b.Repository) {
		add("backend.repository", "must be owner/name")
	}
	if b.APIURL != "" {
		if _, err := e.opts.Guard.CheckURL(ctx, b.APIURL); err != nil {
			add("backend.api_url", fmt.Sprintf("must be the https URL of the API root on a host the operator allows, e.g. %s (%v)", tracker.GitHubAPI, err))
		}
	} else if u, _ := url.Parse(tracker.GitHubAPI); e.opts.Guard.Check(u) != nil {
		add("backend.api_url", "is required: this server does not allow "+tracker.GitHubAPI)
	}
}

// checkJira checks a Jira backend (DESIGN §22) and stores it with its
// defaults spelled out, so a later change of a default never moves an
// existing project's issues to other statuses.
func (e *Engine) checkJira(ctx context.Context, b *tracker.Backend, add func(field, msg string)) {
	if b.Repository != "" || b.APIURL != "" {
		add("backend", "repository and api_url are a github backend's; a jira backend has site and project_key")
	}
	c := jira.Config{Site: strings.TrimSpace(b.Site), ProjectKey: strings.TrimSpace(b.ProjectKey), IssueType: strings.TrimSpace(b.IssueType),
		StatusMap: b.StatusMap, PriorityMap: b.PriorityMap}
	if err := c.Check(); err != nil {
		field, msg, _ := strings.Cut(err.Error(), ": ")
		add("backend."+field, msg)
		return
	}
	if _, err := e.opts.Guard.CheckURL(ctx, c.Site); err != nil {
		add("backend.site", fmt.Sprintf("must be the https root of a Jira site on a host the operator allows, e.g. https://acme.atlassian.net (%v)", err))
	}
	c = c.WithDefaults()
	b.Site, b.ProjectKey, b.IssueType, b.StatusMap, b.PriorityMap = c.Site, c.ProjectKey, c.IssueType, c.StatusMap, c.PriorityMap
}

// credentialHint says what backend.credential may be: only the names the
// tenant may use, never another tenant's.
func credentialHint(names []string) string {
	if len(names) == 0 {
		return "must name a tracker credential the operator declared for this tenant (TICKETD_TRACKER_CREDENTIALS); none is declared for it"
	}
	return "must name a tracker credential the operator declared for this tenant: one of " + strings.Join(names, ", ")
}

// CredentialForEnv names the declared credential tenant may use that reads env.
func (e *Engine) CredentialForEnv(env, tenant string) (string, bool) {
	c, ok := e.opts.Credentials.ForEnv(env, tenant)
	return c.Name, ok
}

// usable refuses a write to a tracker-backed project whose backend names no
// credential its tenant may use (a project stored with a retired token_env
// that no declared credential holds, or one the operator unbound): nothing
// is claimed or sent.
func (e *Engine) usable(projectID string, b *tracker.Backend) error {
	if _, ok := e.opts.Credentials.For(b.Credential, b.Tenant); ok {
		return nil
	}
	return invalidField("project_id", "project %s cannot reach its tracker: it needs a credential the operator declared for this tenant "+
		"(a retired token_env is never read; docs/trackers.md); nothing was written", projectID)
}

// Reconcile runs reconciliation of key now, on behalf of actor: a
// settled operation is checked for duplicates. ok is false for an
// operation that made no request to a tracker.
func (e *Engine) Reconcile(ctx context.Context, key operations.Key, actor string) (ok bool, err error) {
	switch _, err := e.downstream(ctx, key); {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%w: %v", tickets.ErrUnavailable, err)
	}
	err = e.m.DB().WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return addHistory(tx, key, "reconcile_requested", actor, "an operator asked for reconciliation now")
	})
	if err != nil {
		return true, err
	}
	busy, err := e.reconcile(ctx, key, true)
	switch {
	case err != nil && !errors.Is(err, tickets.ErrSettled):
		return true, err
	case busy:
		return true, fmt.Errorf("%w: another worker is reconciling it now", operations.ErrInProgress)
	}
	return true, nil
}

// Resolve records actor's finding r on key, unknown or pending: it did
// not happen, or it did (after checking what r names exists). ok is false
// for an operation that made no request to a tracker.
func (e *Engine) Resolve(ctx context.Context, key operations.Key, actor string, r tickets.Resolution) (ok bool, err error) {
	switch _, err := e.downstream(ctx, key); {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%w: %v", tickets.ErrUnavailable, err)
	}
	row, leased, busy, err := e.lease(ctx, key, false)
	switch {
	case err != nil:
		return true, err
	case busy:
		return true, fmt.Errorf("%w: another worker is reconciling it now; try again shortly", operations.ErrInProgress)
	case !leased:
		return true, fmt.Errorf("%w: it was settled meanwhile", tickets.ErrSettled)
	}
	if r.Outcome == tickets.ResolveNotCreated {
		err = e.fail(ctx, key, fmt.Sprintf("not created (resolved by %s: %s)", actor, r.Reason), "resolved", actor)
	} else if err = e.resolveFound(ctx, key, row, actor, r); err != nil {
		err = errors.Join(e.release(ctx, key, row, nil), err)
	}
	if err == nil {
		e.count(ReconcileResolved)
	}
	return true, err
}

// parseRef reads what names an issue of b (its external ID) as its Ref.
func parseRef(b tracker.Backend, s string) (issueRef, error) {
	ref, err := b.ParseRef(s)
	if err != nil {
		return "", invalidField("external_id", "%v", err)
	}
	return issueRef(ref), nil
}

func invalidField(field, format string, args ...any) *tickets.ValidationError {
	return &tickets.ValidationError{Fields: []tickets.FieldError{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func parseUUIDs(texts ...string) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, len(texts))
	for i, s := range texts {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("bad UUID %q: %w", s, err)
		}
		out[i] = id
	}
	return out, nil
}
