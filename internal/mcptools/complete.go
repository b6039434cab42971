package mcptools

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/tickets"
)

// completes names what each prompt argument and resource-template
// variable completes to: project IDs or ticket keys, of the caller's
// tenant.
var completes = map[mcp.CompleteReference]map[string]completer{
	{Type: "ref/prompt", Name: PromptTriage}:          {"project_id": completeProjects},
	{Type: "ref/prompt", Name: PromptSummarizeTicket}: {"id": completeTicketKeys},
	{Type: "ref/resource", URI: TicketTemplate}:       {"key": completeTicketKeys},
	{Type: "ref/resource", URI: ProjectTemplate}:      {"id": completeProjects},
}

// completer returns up to tickets.MaxCompletions values of the tenant's
// that start with prefix, and whether more match.
type completer func(ctx context.Context, svc *tickets.Service, tenant, prefix string) ([]string, bool, error)

// complete answers completion/complete (the SDK checks that ref and the
// argument's name are present). Anything it does not complete gets no
// values, as the spec asks, rather than an error.
func complete(svc *tickets.Service) func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		p, err := readCaller(ctx, req.Extra)
		if err != nil {
			return nil, err
		}
		ref := *req.Params.Ref
		ref.Name, ref.URI = strings.TrimSpace(ref.Name), strings.TrimSpace(ref.URI)
		res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
		c := completes[ref][req.Params.Argument.Name]
		if c == nil {
			return res, nil
		}
		values, more, err := c(ctx, svc, p.Tenant, strings.TrimSpace(req.Params.Argument.Value))
		if err != nil {
			return nil, serviceError(err)
		}
		res.Completion.Values, res.Completion.HasMore = values, more
		return res, nil
	}
}

func completeTicketKeys(ctx context.Context, svc *tickets.Service, tenant, prefix string) ([]string, bool, error) {
	keys, more, err := svc.CompleteTicketKeys(ctx, tenant, prefix, tickets.MaxCompletions)
	if keys == nil {
		keys = []string{}
	}
	return keys, more, err
}

// completeProjects matches project IDs by prefix, any case: a tenant has
// few projects, so they are all read.
func completeProjects(ctx context.Context, svc *tickets.Service, tenant, prefix string) ([]string, bool, error) {
	ps, err := svc.ListProjects(ctx, tenant)
	if err != nil {
		return nil, false, err
	}
	ids := []string{}
	for _, pr := range ps {
		if strings.HasPrefix(strings.ToLower(pr.ID), strings.ToLower(prefix)) {
			if len(ids) == tickets.MaxCompletions {
				return ids, true, nil
			}
			ids = append(ids, pr.ID)
		}
	}
	return ids, false, nil
}
