package mcptools

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/tickets"
)

// ToolListUsers is list_users' contract name.
const ToolListUsers = "list_users"

const descListUsers = `The people who can be assigned: id is what assignee takes. query matches id, name or e-mail.`

// ListUsersIn is the input of list_users.
type ListUsersIn struct {
	Query string `json:"query,omitempty"`
}

// ListUsersOut is list_users' result.
type ListUsersOut struct {
	Users []contract.User `json:"users"`
}

var listUsers = newTool(spec[ListUsersIn, ListUsersOut]{
	name: ToolListUsers, title: "List users", description: descListUsers, scope: authn.ScopeRead, readOnly: true,
	input: func(s *jsonschema.Schema) { s.Properties["query"].MaxLength = jsonschema.Ptr(tickets.MaxQuery) },
	output: func(s *jsonschema.Schema) {
		u := s.Properties["users"].Items.Properties
		u["created_at"].Format, u["updated_at"].Format = "date-time", "date-time"
	},
	handle: func(ctx context.Context, svc *tickets.Service, c call, in ListUsersIn) (ListUsersOut, error) {
		us, err := svc.People().List(ctx, c.principal.Tenant, in.Query)
		if err != nil {
			return ListUsersOut{}, err
		}
		return ListUsersOut{Users: contract.FromUsers(us)}, nil
	},
})
