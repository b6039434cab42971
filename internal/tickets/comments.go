package tickets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
)

// ActionAddComment is the ledger action of AddComment.
const ActionAddComment = "add_comment"

// MaxCommentBody is the longest comment body, in characters after trimming.
const MaxCommentBody = 20000

// Comment is a note on a ticket. Comments never change the ticket's version.
type Comment struct {
	ID        uuid.UUID
	TicketID  uuid.UUID
	Author    string
	Body      string
	CreatedAt time.Time
}

type commentRow struct {
	ID          string    `gorm:"column:id;primaryKey"`
	TenantID    string    `gorm:"column:tenant_id"`
	TicketID    string    `gorm:"column:ticket_id"`
	Seq         int64     `gorm:"column:seq"`
	Author      string    `gorm:"column:author"`
	Body        string    `gorm:"column:body"`
	OperationID string    `gorm:"column:operation_id"`
	CreatedAt   time.Time `gorm:"column:created_at"`
}

func (commentRow) TableName() string { return "comments" }

// commentResult reads an add_comment record's comment in the same query as
// the record (operations.Ledger.RunFolded's replay), into
// commentRow.replayColumns: only what toComment needs, since the driver
// prepares a scan per column on every lookup, the fresh comments' included.
var commentResult = operations.NewJoin("comments", []string{"id", "ticket_id", "author", "body", "created_at"})

// replayColumns returns scan targets for commentResult's columns, in order.
func (r *commentRow) replayColumns() []any {
	return []any{&r.ID, &r.TicketID, &r.Author, &r.Body, &r.CreatedAt}
}

func (r commentRow) toComment() (Comment, error) {
	ids, err := parseUUIDs(r.ID, r.TicketID)
	if err != nil {
		return Comment{}, fmt.Errorf("comment row %s: %w", r.ID, err)
	}
	return Comment{ID: ids[0], TicketID: ids[1], Author: r.Author, Body: r.Body, CreatedAt: r.CreatedAt.UTC()}, nil
}

// CommentResult is the outcome of AddComment.
type CommentResult struct {
	OperationID uuid.UUID
	Comment     Comment
	Replayed    bool // the comment was added by an earlier call with this ID
}

// normalizeBody trims and composes a comment body and checks its length.
func normalizeBody(body string) (string, error) {
	if msg := checkText(body); msg != "" {
		return "", invalidField("body", "%s", msg)
	}
	body = canonicalText(body, false)
	if n := utf8.RuneCountInString(body); n == 0 || n > MaxCommentBody {
		return "", invalidField("body", "must be 1–%d characters after trimming, got %d", MaxCommentBody, n)
	}
	return body, nil
}

// commentFingerprint identifies an add_comment intent: the resolved ticket
// and the normalised body.
func commentFingerprint(ticketID uuid.UUID, body string) string {
	canonical, err := json.Marshal(struct {
		TicketID string `json:"ticket_id"`
		Body     string `json:"body"`
	}{ticketID.String(), body})
	if err != nil {
		panic(fmt.Sprintf("marshal fingerprint input: %v", err)) // strings only: cannot fail
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// AddComment adds one comment per (tenant, operation ID) to the tenant's
// ticket (UUID or key, any case): a retry with the same ID, ticket and body
// returns the first call's comment with Replayed set. The comment, its
// `commented` event and the operation record commit in one transaction; the
// ticket's version does not change.
//
// Errors: ErrInvalid (bad reference or body; nothing recorded),
// ErrNotFound (no such ticket), operations.ErrConflict, operations.ErrInProgress,
// operations.ErrOutcomeUnknown, ErrUnavailable, operations.ErrUnavailable.
func (s *Service) AddComment(ctx context.Context, c Caller, opID operations.ID, ticketRef, body string) (res CommentResult, err error) {
	defer func() { s.report(ActionAddComment, res.Replayed, err) }()
	if err := requireID(opID); err != nil {
		return CommentResult{}, err
	}
	tenant, author, id := c.Tenant, c.Subject, opID.UUID()
	body, err = normalizeBody(body)
	if err != nil {
		return CommentResult{OperationID: id}, err
	}
	if err := checkActor(author); err != nil {
		return CommentResult{OperationID: id}, err
	}
	if err := s.enroll(ctx, c); err != nil {
		return CommentResult{OperationID: id}, err
	}
	t, err := s.GetTicket(ctx, tenant, ticketRef)
	if err != nil {
		return CommentResult{OperationID: id}, fmt.Errorf("add comment: %w", err)
	}
	b, err := s.backendOf(ctx, tenant, t.ProjectID)
	if err != nil {
		return CommentResult{OperationID: id}, fmt.Errorf("add comment: %w", err)
	}
	return b.AddComment(ctx, Write{Tenant: tenant, Actor: author, ID: id}, t, body)
}

// commentLocal is AddComment on a ticket of a local project.
func (s *Service) commentLocal(ctx context.Context, w Write, t Ticket, body string) (_ CommentResult, err error) {
	tenant, author, id := w.Tenant, w.Actor, w.ID
	key := operations.Key{Tenant: tenant, Action: ActionAddComment, OperationID: id}
	commentID, eventID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	var (
		recorded commentRow
		comment  Comment // the one this call adds
	)
	replay := operations.Replay{Join: commentResult, Into: recorded.replayColumns()}
	out, err := s.ledger.RunFolded(ctx, key, commentFingerprint(t.ID, body), commentID.String(), nil, replay, func(tx *gorm.DB, claim *operations.Fold) error {
		row, unsubscribed, err := s.lockTicketClaiming(tx, claim, tenant, t.ID)
		if err != nil || !claim.Won() {
			return err
		}
		added, now, err := writeComment(tx, row, commentID, id, eventID, author, body)
		if err != nil {
			return err
		}
		if comment, err = added.toComment(); err != nil {
			return err
		}
		return s.enqueue(tx, WriteEvent{ID: eventID, Tenant: tenant, Kind: EventCommented, OperationID: id,
			At: comment.CreatedAt, Ticket: now, Comment: &comment, Unsubscribed: unsubscribed})
	})
	if err != nil {
		return CommentResult{OperationID: id}, fmt.Errorf("add comment: %w", err)
	}
	if !out.Replayed {
		return CommentResult{OperationID: id, Comment: comment}, nil
	}
	if out.ResultRead {
		comment, err = recorded.toComment()
	} else {
		comment, err = s.commentByID(ctx, tenant, out.Record.ResultID)
	}
	if err != nil {
		return CommentResult{OperationID: id}, fmt.Errorf("add comment: read committed comment: %w", err)
	}
	return CommentResult{OperationID: id, Comment: comment, Replayed: true}, nil
}

// insertComment locks the ticket and adds the comment (writeComment).
func insertComment(tx *gorm.DB, tenant, author string, opID, commentID, eventID, ticketID uuid.UUID, body string) (Comment, Ticket, error) {
	row, err := lockTicket(tx, tenant, ticketID)
	if err != nil {
		return Comment{}, Ticket{}, err
	}
	c, t, err := writeComment(tx, row, commentID, opID, eventID, author, body)
	if err != nil {
		return Comment{}, Ticket{}, err
	}
	added, err := c.toComment()
	return added, t, err
}

// writeComment adds the comment and its `commented` event at the ticket's
// next history position, under the ticket's row lock (row: the ticket as
// locked), and returns the comment's row and the ticket as the comment
// found it.
func writeComment(tx *gorm.DB, row ticketRow, commentID, opID, eventID uuid.UUID, author, body string) (commentRow, Ticket, error) {
	t, err := row.toTicket()
	if err != nil {
		return commentRow{}, Ticket{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	c := commentRow{
		ID: commentID.String(), TenantID: row.TenantID, TicketID: row.ID, Author: author, Body: body,
		OperationID: opID.String(), CreatedAt: now,
	}
	e := Event{
		ID: eventID, TicketID: t.ID, Version: t.Version, Kind: EventCommented,
		Actor: author, OperationID: opID, CommentID: &commentID, CreatedAt: now,
	}
	if tx.Dialector.Name() == "postgres" {
		err = commentWithEventPostgres(tx, &c, e)
	} else {
		err = commentWithEventSteps(tx, &c, e)
	}
	return c, t, err
}

// commentWithEventSteps takes the next history position, then inserts the
// comment and its event, one statement each.
func commentWithEventSteps(tx *gorm.DB, c *commentRow, e Event) error {
	seq, err := nextSeq(tx, c.TenantID, e.TicketID)
	if err != nil {
		return err
	}
	c.Seq, e.Seq = seq, seq
	// The comment goes first: its event refers to it.
	if err := tx.Create(c).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return errCommentExpired
		}
		return fmt.Errorf("%w: insert comment: %v", ErrUnavailable, err)
	}
	return insertEvent(tx, c.TenantID, e)
}

// errCommentExpired is the error of a comment insert that met a duplicate
// key. Only the unique (tenant, operation_id) index can fire there (the ID
// and seq are fresh): the comment was added once and its operation record
// pruned since. Adding it again is the duplicate the ledger exists to stop.
var errCommentExpired = fmt.Errorf("%w: a comment was already added with this operation ID", operations.ErrExpired)

// commentWithEventSQL is commentWithEventSteps in one statement. It runs
// under the ticket's row lock, taken by an earlier statement, so MAX(seq) + 1
// is the next position as nextSeq would read it; the event's foreign key to
// the comment is checked at the end of the statement, after both inserts.
const commentWithEventSQL = `WITH c AS (
	INSERT INTO "comments" (id, tenant_id, ticket_id, seq, author, body, operation_id, created_at)
	SELECT CAST(@id AS uuid), @tenant, CAST(@ticket AS uuid), COALESCE(MAX(seq), 0) + 1, @author, @body,
		CAST(@op AS uuid), CAST(@now AS timestamptz)
	FROM ticket_events WHERE tenant_id = @tenant AND ticket_id = CAST(@ticket AS uuid)
	RETURNING id, seq
)
INSERT INTO "ticket_events" (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, comment_id, changes,
	created_at)
SELECT CAST(@event AS uuid), @tenant, CAST(@ticket AS uuid), c.seq, @version, @kind, @author, CAST(@op AS uuid), c.id,
	@changes, CAST(@now AS timestamptz)
FROM c
RETURNING seq`

// commentWithEventPostgres runs commentWithEventSQL and sets c's position.
func commentWithEventPostgres(tx *gorm.DB, c *commentRow, e Event) error {
	changes, err := encodeChanges(e.Changes)
	if err != nil {
		return err
	}
	_, err = rawFirst(tx, commentWithEventSQL, map[string]any{
		"id": c.ID, "tenant": c.TenantID, "ticket": c.TicketID, "author": c.Author, "body": c.Body, "op": c.OperationID,
		"now": c.CreatedAt, "event": e.ID.String(), "version": e.Version, "kind": string(e.Kind), "changes": changes,
	}, &c.Seq)
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		// The comment's unique operation index or the event's: either way
		// this operation was applied once and its record pruned since.
		return errCommentExpired
	case err != nil:
		return fmt.Errorf("%w: insert comment: %v", ErrUnavailable, err)
	}
	return nil
}

func (s *Service) commentByID(ctx context.Context, tenant, id string) (Comment, error) {
	var row commentRow
	err := s.db.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenant, id).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return Comment{}, fmt.Errorf("comment: %w", ErrNotFound)
	case err != nil:
		return Comment{}, fmt.Errorf("%w: read comment: %v", ErrUnavailable, err)
	}
	return row.toComment()
}

// CommentPage is one page of a ticket's comments, oldest first.
type CommentPage struct {
	Comments   []Comment
	NextCursor string
}

// ListComments returns the comments on the tenant's ticket (UUID or key),
// oldest first, a page at a time; a page also ends early at MaxPageBytes.
//
// Errors: ErrInvalid (bad reference, limit or cursor), ErrNotFound, ErrUnavailable.
func (s *Service) ListComments(ctx context.Context, tenant, ticketRef string, p ListParams) (CommentPage, error) {
	t, err := s.GetTicket(ctx, tenant, ticketRef)
	if err != nil {
		return CommentPage{}, err
	}
	items, next, err := listBySeq(ctx, s, "comments", tenant, t.ID, p,
		func(r commentRow) (Comment, error) { return r.toComment() }, func(r commentRow) int64 { return r.Seq })
	return CommentPage{Comments: items, NextCursor: next}, err
}
