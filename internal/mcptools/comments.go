package mcptools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// Comment tools' contract names.
const (
	ToolAddComment   = "add_comment"
	ToolListComments = "list_comments"
)

const (
	descAddComment = `Add a comment to a ticket (its version stays).

Retry contract: a fresh random UUID (v4 or v7) as operation_id per intended comment; on any doubt (timeout, lost connection, retryable error) retry with the SAME operation_id and arguments, never a new one. A retry adds nothing: it answers the original comment with replayed: true (30 days).`

	descListComments = `A ticket's comments, oldest first; limit defaults to 50. Pass next_cursor as cursor.`
)

// AddCommentIn is the input of add_comment.
type AddCommentIn struct {
	OperationID string `json:"operation_id"`
	ID          string `json:"id"`
	contract.CommentFields
}

// AddCommentOut is add_comment's success result.
type AddCommentOut struct {
	OperationID string           `json:"operation_id" jsonschema:"The operation_id, lower-cased."`
	Status      string           `json:"status" jsonschema:"Always succeeded."`
	Replayed    bool             `json:"replayed" jsonschema:"True when an earlier call with this operation_id added the comment and this call only returned it."`
	TicketID    string           `json:"ticket_id"`
	Comment     contract.Comment `json:"comment"`
}

// ListCommentsIn is the input of list_comments.
type ListCommentsIn struct {
	ID     string `json:"id"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// ListCommentsOut is list_comments' result.
type ListCommentsOut struct {
	Comments   []contract.Comment `json:"comments"`
	NextCursor string             `json:"next_cursor,omitempty" jsonschema:"Present when there are more comments: pass it as cursor."`
}

func (in AddCommentIn) operationID() string { return in.OperationID }

var (
	addComment = newTool(spec[AddCommentIn, AddCommentOut]{
		name: ToolAddComment, title: "Add comment", description: descAddComment, scope: authn.ScopeWrite,
		input: func(s *jsonschema.Schema) {
			s.Properties["operation_id"].Pattern = operationIDPattern
			s.Properties["id"].MinLength, s.Properties["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
			contract.ConstrainCommentFields(s)
		},
		output: func(s *jsonschema.Schema) {
			s.Properties["status"] = succeeded()
			contract.ConstrainComment(s.Properties["comment"])
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in AddCommentIn) (AddCommentOut, error) {
			res, err := svc.AddComment(ctx, c.caller(), c.operationID, in.ID, in.Body)
			if err != nil {
				return AddCommentOut{}, err
			}
			return AddCommentOut{
				OperationID: res.OperationID.String(), Status: string(operations.StatusSucceeded), Replayed: res.Replayed,
				TicketID: res.Comment.TicketID.String(), Comment: contract.FromComment(res.Comment),
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
		output: func(s *jsonschema.Schema) { contract.ConstrainComment(s.Properties["comments"].Items) },
		handle: func(ctx context.Context, svc *tickets.Service, c call, in ListCommentsIn) (ListCommentsOut, error) {
			page, err := svc.ListComments(ctx, c.principal.Tenant, in.ID, tickets.ListParams{Limit: in.Limit, Cursor: in.Cursor})
			if err != nil {
				return ListCommentsOut{}, err
			}
			out := ListCommentsOut{Comments: make([]contract.Comment, len(page.Comments)), NextCursor: page.NextCursor}
			for i, cm := range page.Comments {
				out.Comments[i] = contract.FromComment(cm)
			}
			return out, nil
		},
	})
)
