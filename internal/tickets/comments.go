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
	t, err := s.GetTicket(ctx, tenant, ticketRef)
	if err != nil {
		return CommentResult{OperationID: id}, fmt.Errorf("add comment: %w", err)
	}
	if t.ExternalID != "" {
		return s.commentTracked(ctx, tenant, author, id, t, body)
	}
	key := operations.Key{Tenant: tenant, Action: ActionAddComment, OperationID: id}
	commentID, eventID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	var added Comment
	out, err := s.ledger.Run(ctx, key, commentFingerprint(t.ID, body), commentID.String(), func(tx *gorm.DB) error {
		var now Ticket
		if added, now, err = insertComment(tx, tenant, author, id, commentID, eventID, t.ID, body); err != nil {
			return err
		}
		return s.enqueue(tx, WriteEvent{ID: eventID, Tenant: tenant, Kind: EventCommented, OperationID: id,
			At: added.CreatedAt, Ticket: now, Comment: &added})
	})
	if err != nil {
		return CommentResult{OperationID: id}, fmt.Errorf("add comment: %w", err)
	}
	if !out.Replayed {
		return CommentResult{OperationID: id, Comment: added}, nil
	}
	recorded, err := s.commentByID(ctx, tenant, out.Record.ResultID)
	if err != nil {
		return CommentResult{OperationID: id}, fmt.Errorf("add comment: read committed comment: %w", err)
	}
	return CommentResult{OperationID: id, Comment: recorded, Replayed: true}, nil
}

// insertComment adds the comment and its `commented` event under the
// ticket's row lock, and returns the ticket as the comment found it.
func insertComment(tx *gorm.DB, tenant, author string, opID, commentID, eventID, ticketID uuid.UUID, body string) (Comment, Ticket, error) {
	row, err := lockTicket(tx, tenant, ticketID)
	if err != nil {
		return Comment{}, Ticket{}, err
	}
	t, err := row.toTicket()
	if err != nil {
		return Comment{}, Ticket{}, err
	}
	seq, err := nextSeq(tx, tenant, ticketID)
	if err != nil {
		return Comment{}, Ticket{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	c := commentRow{
		ID: commentID.String(), TenantID: tenant, TicketID: ticketID.String(), Seq: seq, Author: author, Body: body,
		OperationID: opID.String(), CreatedAt: now,
	}
	// The comment goes first: its event refers to it.
	if err := tx.Create(&c).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			// Only the unique (tenant, operation_id) index can fire here
			// (the ID and seq are fresh): the comment was added once and
			// its operation record pruned since. Adding it again is the
			// duplicate the ledger exists to stop.
			return Comment{}, Ticket{}, fmt.Errorf("%w: a comment was already added with this operation ID", operations.ErrExpired)
		}
		return Comment{}, Ticket{}, fmt.Errorf("%w: insert comment: %v", ErrUnavailable, err)
	}
	err = insertEvent(tx, tenant, Event{
		ID: eventID, TicketID: ticketID, Seq: seq, Version: t.Version, Kind: EventCommented,
		Actor: author, OperationID: opID, CommentID: &commentID, CreatedAt: now,
	})
	if err != nil {
		return Comment{}, Ticket{}, err
	}
	added, err := c.toComment()
	return added, t, err
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
