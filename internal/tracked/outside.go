package tracked

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/tracker"
)

// openTracker opens b's tracker for tenant's operations: every request to
// it runs as an outside call (limits.Outside), under the tenant's tracker
// cap and without the work slot the call holds, which it takes back to
// record the answer. A slot for the claim, none for the call, a slot for
// the record.
func (e *Engine) openTracker(tenant string, b tracker.Backend) (tracker.Tracker, error) {
	t, err := e.opts.Open(b)
	if err != nil {
		return nil, err
	}
	return outsideTracker{t: t, outside: e.opts.outside, tenant: tenant}, nil
}

// outsideTracker is a Tracker whose every request is an outside call of
// tenant'e. A request that never got one of the tenant's outside slots
// was not sent (tracker.ErrNotSent).
type outsideTracker struct {
	t       tracker.Tracker
	outside *limits.Outside
	tenant  string
}

func (o outsideTracker) do(ctx context.Context, call func() error) error {
	var called bool
	err := o.outside.Do(ctx, o.tenant, func() error { called = true; return call() })
	if !called && err != nil {
		return fmt.Errorf("%w: %w", tracker.ErrNotSent, err)
	}
	return err
}

func (o outsideTracker) CreateIssue(ctx context.Context, in tracker.NewIssue) (i tracker.Issue, err error) {
	err = o.do(ctx, func() error { i, err = o.t.CreateIssue(ctx, in); return err })
	return i, err
}

func (o outsideTracker) GetIssue(ctx context.Context, ref string) (i tracker.Issue, err error) {
	err = o.do(ctx, func() error { i, err = o.t.GetIssue(ctx, ref); return err })
	return i, err
}

func (o outsideTracker) FindMarked(ctx context.Context, m tracker.Mark, since time.Time) (is []tracker.Issue, err error) {
	err = o.do(ctx, func() error { is, err = o.t.FindMarked(ctx, m, since); return err })
	return is, err
}

func (o outsideTracker) EditIssue(ctx context.Context, ref string, edit tracker.IssueEdit) (i tracker.Issue, err error) {
	err = o.do(ctx, func() error { i, err = o.t.EditIssue(ctx, ref, edit); return err })
	return i, err
}

func (o outsideTracker) CreateComment(ctx context.Context, ref, body string) (c tracker.Comment, err error) {
	err = o.do(ctx, func() error { c, err = o.t.CreateComment(ctx, ref, body); return err })
	return c, err
}

func (o outsideTracker) ListComments(ctx context.Context, ref string, since time.Time) (cs []tracker.Comment, err error) {
	err = o.do(ctx, func() error { cs, err = o.t.ListComments(ctx, ref, since); return err })
	return cs, err
}

func (o outsideTracker) GetComment(ctx context.Context, ref, commentID string) (c tracker.Comment, err error) {
	err = o.do(ctx, func() error { c, err = o.t.GetComment(ctx, ref, commentID); return err })
	return c, err
}

func (o outsideTracker) DeleteComment(ctx context.Context, ref, commentID string) error {
	return o.do(ctx, func() error { return o.t.DeleteComment(ctx, ref, commentID) })
}

func (o outsideTracker) CloseDuplicate(ctx context.Context, m tracker.Mark, keep, dup tracker.Issue) error {
	return o.do(ctx, func() error { return o.t.CloseDuplicate(ctx, m, keep, dup) })
}

func (o outsideTracker) Account(ctx context.Context, email string) (a string, err error) {
	err = o.do(ctx, func() error { a, err = o.t.Account(ctx, email); return err })
	return a, err
}
