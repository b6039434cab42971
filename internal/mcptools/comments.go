package mcptools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/wire"
)

// Comment tools' contract names.
const (
	ToolAddComment   = "add_comment"
	ToolListComments = "list_comments"
)

const (
	descAddComment = `Add a comment to one of your tenant's tickets: what you found, did or decided. Comments do not change the ticket's version. Safe to retry: one operation_id adds at most one comment, ever.

operation_id: generate a fresh random UUID (version 4 or 7) for this one intended comment, and reuse exactly the same operation_id and arguments on every retry of it (after a timeout, a lost connection, a retryable error, or whenever you are unsure it went through). A retry returns the original comment (same comment.id) with replayed: true and adds nothing. ticketd remembers a succeeded operation_id for 30 days, so retries belong within that window. A new comment gets a new operation_id.

On success: status "succeeded" and the comment.
Errors (isError: true, error.code, and a sentence saying what to do next):
- invalid_input: nothing was attempted; fix what the message names and call again; the same operation_id is fine.
- not_found: your tenant has no such ticket.
- idempotency_conflict: this operation_id was already used for a different call; nothing was written. Generate a new operation_id only for a genuinely new comment.
- operation_in_progress: a call with this operation_id is still running; wait a few seconds and retry with the same operation_id and arguments.
- outcome_unknown: the comment may or may not have been added; call get_operation_status with this operation_id, or retry with the same operation_id and arguments (never a new one).
- unavailable or internal: retry shortly with the same operation_id and arguments.
- forbidden: your token lacks the tickets:write scope; retrying will not help.`

	descListComments = `List the comments on one of your tenant's tickets, oldest first. Returns at most limit comments (default 50, at most 200); when next_cursor is present, call again with it as cursor for the next page. Errors: not_found if your tenant has no such ticket. Read-only.`
)

// AddCommentIn is the input of add_comment.
type AddCommentIn struct {
	OperationID string `json:"operation_id" jsonschema:"A fresh random UUID (version 4 or 7) that you generate once for this intended comment and reuse unchanged on every retry of it."`
	ID          string `json:"id" jsonschema:"The ticket's ID (UUID) or key, like SUP-42."`
	wire.CommentFields
}

// AddCommentOut is add_comment's success result.
type AddCommentOut struct {
	OperationID string       `json:"operation_id" jsonschema:"The operation_id, lower-cased."`
	Status      string       `json:"status" jsonschema:"Always succeeded."`
	Replayed    bool         `json:"replayed" jsonschema:"True when an earlier call with this operation_id added the comment and this call only returned it."`
	TicketID    string       `json:"ticket_id"`
	Comment     wire.Comment `json:"comment"`
}

// ListCommentsIn is the input of list_comments.
type ListCommentsIn struct {
	ID     string `json:"id" jsonschema:"The ticket's ID (UUID) or key, like SUP-42."`
	Limit  int    `json:"limit,omitempty" jsonschema:"At most this many comments, 1-200 (default 50)."`
	Cursor string `json:"cursor,omitempty" jsonschema:"The next_cursor of the previous page."`
}

// ListCommentsOut is list_comments' result.
type ListCommentsOut struct {
	Comments   []wire.Comment `json:"comments"`
	NextCursor string         `json:"next_cursor,omitempty" jsonschema:"Present when there are more comments: pass it as cursor."`
}

func (in AddCommentIn) operationID() string { return in.OperationID }

var (
	addComment = newTool(spec[AddCommentIn, AddCommentOut]{
		name: ToolAddComment, title: "Add comment", description: descAddComment, scope: authn.ScopeWrite,
		input: func(s *jsonschema.Schema) {
			s.Properties["operation_id"].Pattern = operationIDPattern
			s.Properties["id"].MinLength, s.Properties["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
			wire.ConstrainCommentFields(s)
		},
		output: func(s *jsonschema.Schema) {
			s.Properties["status"].Enum = []any{"succeeded"}
			wire.ConstrainComment(s.Properties["comment"])
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in AddCommentIn) (AddCommentOut, error) {
			res, err := svc.AddComment(ctx, c.principal.Tenant, c.principal.Subject, in.OperationID, in.ID, in.Body)
			if err != nil {
				return AddCommentOut{}, err
			}
			return AddCommentOut{
				OperationID: c.operationID, Status: string(operations.StatusSucceeded), Replayed: res.Replayed,
				TicketID: res.Comment.TicketID.String(), Comment: wire.FromComment(res.Comment),
			}, nil
		},
	})

	listComments = newTool(spec[ListCommentsIn, ListCommentsOut]{
		name: ToolListComments, title: "List comments", description: descListComments, scope: authn.ScopeRead, readOnly: true,
		input: func(s *jsonschema.Schema) {
			p := s.Properties
			p["id"].MinLength, p["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
			p["limit"].Minimum, p["limit"].Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(tickets.MaxLimit))
			p["limit"].Default = json.RawMessage(fmt.Sprint(tickets.DefaultLimit))
			p["cursor"].MaxLength = jsonschema.Ptr(maxCursor)
		},
		output: func(s *jsonschema.Schema) { wire.ConstrainComment(s.Properties["comments"].Items) },
		handle: func(ctx context.Context, svc *tickets.Service, c call, in ListCommentsIn) (ListCommentsOut, error) {
			page, err := svc.ListComments(ctx, c.principal.Tenant, in.ID, tickets.ListParams{Limit: in.Limit, Cursor: in.Cursor})
			if err != nil {
				return ListCommentsOut{}, err
			}
			out := ListCommentsOut{Comments: make([]wire.Comment, len(page.Comments)), NextCursor: page.NextCursor}
			for i, cm := range page.Comments {
				out.Comments[i] = wire.FromComment(cm)
			}
			return out, nil
		},
	})
)
