package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/cursor"
	"github.com/ticketd/ticketd/internal/operations"
)

// Options configures a Gate. Zero values take the defaults.
type Options struct {
	Policy Policy
	// Secret signs request states (TICKETD_APPROVAL_SECRET). Replicas
	// behind one load balancer need the same one; empty means a random key
	// per process.
	Secret []byte
	// TTL bounds how long a person has to answer, and how long an approval
	// stays usable once given (TICKETD_APPROVAL_TTL), on every path: a
	// signed request state, the console page, REST, and the consume in the
	// write's transaction. Default 5 minutes.
	TTL time.Duration
	// Channels are the ways the gate asks inside the agent's client
	// (TICKETD_APPROVAL_CHANNELS). Nil is form and URL; without ModeForm a
	// form-capable client is sent to the URL instead (URL elicitation when
	// it declared it, approval_required otherwise), for deployments that
	// do not trust their MCP hosts to show the form to a person.
	Channels []Mode
	// FourEyes (TICKETD_APPROVAL_FOUR_EYES) requires the approver's subject
	// to differ from the requester's. A form is answered by the
	// requester's own client, so with FourEyes no form is ever offered or
	// accepted: the person decides on the URL.
	FourEyes bool
	// PageURL returns the console page of an approval (an absolute URL in
	// production, so an agent's client can open it).
	PageURL func(approvalID string) string
	// OnEvent, when set, is told each EventAsked, EventApproved,
	// EventDeclined and EventExpired. It must be cheap and safe for
	// concurrent use.
	OnEvent func(event string)
	// Now is the clock; tests set it to move past expiry.
	Now func() time.Time
}

// DefaultTTL is Options.TTL's default.
const DefaultTTL = 5 * time.Minute

// Gate decides whether a write may run without a person's yes, asks for
// one, and consumes it in the write's transaction.
type Gate struct {
	db    *gorm.DB
	opts  Options
	codec cursor.Codec
}

// New returns a gate over a migrated database.
func New(db *gorm.DB, opts Options) *Gate {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PageURL == nil {
		opts.PageURL = func(id string) string { return "/console/approvals/" + id }
	}
	return &Gate{db: db, opts: opts, codec: cursor.New(opts.Secret)}
}

// formAllowed reports whether the gate may ask with a form in the agent's
// client.
func (g *Gate) formAllowed() bool {
	return !g.opts.FourEyes && (g.opts.Channels == nil || slices.Contains(g.opts.Channels, ModeForm))
}

// Policy is the gate's policy.
func (g *Gate) Policy() Policy { return g.opts.Policy }

// URL is the console page of approval id.
func (g *Gate) URL(id string) string { return g.opts.PageURL(id) }

func (g *Gate) event(name string) {
	if g.opts.OnEvent != nil {
		g.opts.OnEvent(name)
	}
}

func (g *Gate) now() time.Time { return g.opts.Now().UTC().Truncate(time.Microsecond) }

// state is what a request state carries; the HMAC scope binds it to the
// tenant, subject, action, operation ID and fingerprint. Its expiry is the
// approval's, read from the store on every use: a yes given late in the
// ask's window lasts TTL from when it was given.
type state struct {
	ApprovalID string `json:"a"`
	Mode       Mode   `json:"m"`
}

func stateScope(t Target) string {
	return strings.Join([]string{"approval-state", t.Key.Tenant, t.Subject, t.Key.Action,
		t.Key.OperationID.String(), t.Fingerprint}, "\x00")
}

// Check is the gate for one first execution of the write t, which would do
// p. It returns nil, nil when the policy needs no approval. With an
// approval in hand it returns the step that consumes it inside the write's
// transaction. Otherwise it asks: *RequiredError (ErrRequired) says how,
// using what the request's Channel allows.
//
// Errors: ErrRequired (*RequiredError), ErrDeclined, ErrBadState (a request
// state that this server did not issue for exactly this tenant, subject and
// write, or one answered already), ErrUnavailable. An approval past its
// expiry, given or not, is asked again.
func (g *Gate) Check(ctx context.Context, t Target, p Proposal) (operations.WriteFunc, error) {
	if !g.opts.Policy.Needs(p) {
		return nil, nil
	}
	ch := channelFrom(ctx)
	if ch.State != "" {
		return g.answered(ctx, t, p, ch)
	}
	cur, found, err := g.current(ctx, t)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, g.ask(ctx, t, p, ch)
	case cur.Status == StatusApproved:
		return g.consume(t, cur.ID), nil
	case cur.Status == StatusDeclined:
		if err := g.markReported(ctx, cur.Tenant, cur.ID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w by %s (approval %s)", ErrDeclined, cur.DecidedBy, cur.ID)
	}
	return nil, g.required(cur, ch)
}

// answered handles a retry that carries a request state: verified, then
// decided by the person's answer (form) or the stored decision (URL).
func (g *Gate) answered(ctx context.Context, t Target, p Proposal, ch Channel) (operations.WriteFunc, error) {
	var st state
	if err := g.codec.Decode(stateScope(t), ch.State, &st); err != nil {
		return nil, fmt.Errorf("%w: requestState was not issued for this caller and these arguments", ErrBadState)
	}
	a, err := g.byID(ctx, t.Key.Tenant, st.ApprovalID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: requestState names no approval", ErrBadState)
	}
	if err != nil {
		return nil, err
	}
	now := g.now()
	lapsed := !now.Before(a.ExpiresAt)
	switch {
	case a.Status == StatusExpired, lapsed && (a.Status == StatusPending || a.Status == StatusApproved):
		// Expired, asked or given: ask again rather than fail (the spec's
		// advice). A yes is good for TTL after it was given, not for as
		// long as someone keeps its state.
		if a.Status != StatusExpired {
			if err := g.expire(ctx, a.Tenant, a.ID); err != nil {
				return nil, err
			}
		}
		return nil, g.ask(ctx, t, p, ch)
	case a.Status == StatusApproved:
		return g.consume(t, a.ID), nil
	case a.Status == StatusUsed:
		// A concurrent retry with this state made the write after this
		// call's fast path looked: the claim finds its record and replays
		// it. Should the claim find none, the consume step refuses, as the
		// approval is used.
		return g.consume(t, a.ID), nil
	case a.Status != StatusPending:
		return nil, fmt.Errorf("%w: this requestState was answered already (approval %s is %s)", ErrBadState, a.ID, a.Status)
	}
	if ch.Answer == nil || (st.Mode == ModeForm && !g.formAllowed()) {
		// No answer yet, or a form answer this gate no longer takes (the
		// channels or four-eyes changed since it asked): ask as it now
		// may.
		return nil, g.required(a, ch)
	}
	if st.Mode == ModeURL {
		// The client's accept means only that the person agreed to open
		// the page; what they decided there is in the store.
		if ch.Answer.Action != "accept" {
			return nil, g.decide(ctx, a, t.Subject, false, ViaURL)
		}
		return nil, g.required(a, Channel{})
	}
	approve := ch.Answer.Action == "accept" && ch.Answer.Approve
	if err := g.decide(ctx, a, t.Subject, approve, ViaForm); err != nil {
		return nil, err
	}
	return g.consume(t, a.ID), nil
}

// ask records a new pending approval for t and asks for it.
func (g *Gate) ask(ctx context.Context, t Target, p Proposal, ch Channel) error {
	proposal, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode proposal: %w", err)
	}
	now := g.now()
	row := approvalRow{
		ApprovalID: uuid.NewString(), TenantID: t.Key.Tenant, Action: t.Key.Action, OperationID: t.Key.OperationID.String(),
		Fingerprint: t.Fingerprint, RequestedBy: t.Subject, Proposal: string(proposal), Status: string(StatusPending),
		CreatedAt: now, ExpiresAt: now.Add(g.opts.TTL),
	}
	if err := g.db.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("%w: record approval: %v", ErrUnavailable, err)
	}
	g.event(EventAsked)
	a, err := row.toApproval()
	if err != nil {
		return err
	}
	return g.required(a, ch)
}

// required builds the ask for a pending approval, in the best mode both the
// request and the gate's channels allow.
func (g *Gate) required(a Approval, ch Channel) error {
	e := &RequiredError{Approval: a, Mode: ModeNone, URL: g.URL(a.ID)}
	switch {
	case ch.Form && g.formAllowed():
		e.Mode = ModeForm
	case ch.URL:
		e.Mode = ModeURL
	default:
		return e
	}
	st, err := g.codec.Encode(stateScope(Target{
		Key:         operations.Key{Tenant: a.Tenant, Action: a.Action, OperationID: a.OperationID},
		Fingerprint: a.Fingerprint, Subject: a.RequestedBy,
	}), state{ApprovalID: a.ID, Mode: e.Mode})
	if err != nil {
		return err
	}
	e.State = st
	return e
}

// decide records the person's answer on a pending approval. A no is
// reported by this very answer, so it is marked reported at once.
func (g *Gate) decide(ctx context.Context, a Approval, by string, approve bool, via Via) error {
	now := g.now()
	updates := map[string]any{"decided_by": by, "decided_via": string(via), "decided_at": now}
	if approve {
		updates["status"], updates["expires_at"] = string(StatusApproved), now.Add(g.opts.TTL)
	} else {
		updates["status"], updates["reported_at"] = string(StatusDeclined), now
	}
	res := g.db.WithContext(ctx).Model(&approvalRow{}).
		Where("approval_id = ? AND tenant_id = ? AND status = ? AND expires_at > ?", a.ID, a.Tenant, string(StatusPending), now).Updates(updates)
	switch {
	case res.Error != nil:
		return fmt.Errorf("%w: decide approval: %v", ErrUnavailable, res.Error)
	case res.RowsAffected == 0:
		// A concurrent retry with the same state decided first; the
		// stored decision stands.
		cur, err := g.byID(ctx, a.Tenant, a.ID)
		if err != nil {
			return err
		}
		if (cur.Status == StatusApproved || cur.Status == StatusUsed) && approve {
			return nil
		}
		return fmt.Errorf("%w: this requestState was answered already (approval %s is %s)", ErrBadState, a.ID, cur.Status)
	}
	if !approve {
		g.event(EventDeclined)
		return fmt.Errorf("%w by %s (approval %s)", ErrDeclined, by, a.ID)
	}
	g.event(EventApproved)
	return nil
}

// consume is the step that runs in the write's transaction: it marks the
// approval used (only an approved one, not yet expired, only once) and
// names it on the operation record, so both commit or roll back with the
// write.
func (g *Gate) consume(t Target, approvalID string) operations.WriteFunc {
	return func(tx *gorm.DB) error {
		res := tx.Model(&approvalRow{}).
			Where("approval_id = ? AND tenant_id = ? AND status = ? AND expires_at > ?",
				approvalID, t.Key.Tenant, string(StatusApproved), g.now()).
			Updates(map[string]any{"status": string(StatusUsed)})
		switch {
		case res.Error != nil:
			return fmt.Errorf("%w: consume approval: %v", ErrUnavailable, res.Error)
		case res.RowsAffected != 1:
			return fmt.Errorf("%w: approval %s was used or expired meanwhile", ErrRequired, approvalID)
		}
		err := tx.Table("operations").
			Where("tenant_id = ? AND action = ? AND operation_id = ?", t.Key.Tenant, t.Key.Action, t.Key.OperationID.String()).
			Update("approval_id", approvalID).Error
		if err != nil {
			return fmt.Errorf("%w: record approval on operation: %v", ErrUnavailable, err)
		}
		return nil
	}
}

// current returns the approval in force for t: the newest one that is
// pending or approved and not expired, or declined and not yet reported.
func (g *Gate) current(ctx context.Context, t Target) (Approval, bool, error) {
	var rows []approvalRow
	err := g.db.WithContext(ctx).
		Where("tenant_id = ? AND action = ? AND operation_id = ? AND requested_by = ? AND fingerprint = ?",
			t.Key.Tenant, t.Key.Action, t.Key.OperationID.String(), t.Subject, t.Fingerprint).
		Where("(status IN ? AND expires_at > ?) OR (status = ? AND reported_at IS NULL)",
			[]string{string(StatusPending), string(StatusApproved)}, g.now(), string(StatusDeclined)).
		Order("created_at DESC").Limit(1).Find(&rows).Error
	if err != nil {
		return Approval{}, false, fmt.Errorf("%w: look up approval: %v", ErrUnavailable, err)
	}
	if len(rows) == 0 {
		return Approval{}, false, nil
	}
	a, err := rows[0].toApproval()
	return a, err == nil, err
}

func (g *Gate) markReported(ctx context.Context, tenant, id string) error {
	if err := g.db.WithContext(ctx).Model(&approvalRow{}).Where("tenant_id = ? AND approval_id = ?", tenant, id).
		Update("reported_at", g.now()).Error; err != nil {
		return fmt.Errorf("%w: mark decline reported: %v", ErrUnavailable, err)
	}
	return nil
}

// expire marks approval id expired if it is pending or approved (unused)
// and its time has run out.
func (g *Gate) expire(ctx context.Context, tenant, id string) error {
	res := g.db.WithContext(ctx).Model(&approvalRow{}).
		Where("tenant_id = ? AND approval_id = ? AND status IN ? AND expires_at <= ?",
			tenant, id, []string{string(StatusPending), string(StatusApproved)}, g.now()).
		Update("status", string(StatusExpired))
	if res.Error != nil {
		return fmt.Errorf("%w: expire approval: %v", ErrUnavailable, res.Error)
	}
	if res.RowsAffected > 0 {
		g.event(EventExpired)
	}
	return nil
}

// Expire marks every pending or approved (unused) approval whose time ran
// out before now as expired, and returns how many it marked (prune).
func (g *Gate) Expire(ctx context.Context) (int64, error) {
	res := g.db.WithContext(ctx).Model(&approvalRow{}).
		Where("status IN ? AND expires_at <= ?", []string{string(StatusPending), string(StatusApproved)}, g.now()).
		Update("status", string(StatusExpired))
	if res.Error != nil {
		return 0, fmt.Errorf("%w: expire approvals: %v", ErrUnavailable, res.Error)
	}
	for range res.RowsAffected {
		g.event(EventExpired)
	}
	return res.RowsAffected, nil
}
