package mcptools

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/tickets"
)

// The prompts (docs/agents.md#prompts): a user picks one in the client,
// and it fills a message from the tenant's data for the model to act on.
const (
	PromptTriage          = "triage"
	PromptSummarizeTicket = "summarize_ticket"
)

func registerPrompts(s *mcp.Server, svc *tickets.Service) {
	s.AddPrompt(&mcp.Prompt{
		Name: PromptTriage, Title: "Triage a project",
		Description: "The open tickets of a project, the most urgent first, with priority and assignee, and how to triage them with update_ticket.",
		Arguments:   []*mcp.PromptArgument{{Name: "project_id", Description: "The project (list_projects' id).", Required: true}},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return prompt(ctx, req, "project_id", func(p authn.Principal, arg string) (string, error) { return triageText(ctx, svc, p, arg) })
	})
	s.AddPrompt(&mcp.Prompt{
		Name: PromptSummarizeTicket, Title: "Summarize a ticket",
		Description: "A ticket with its description and latest comments, and the summary to write of it.",
		Arguments:   []*mcp.PromptArgument{{Name: "id", Description: "The ticket's key (SUP-42) or ID.", Required: true}},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return prompt(ctx, req, "id", func(p authn.Principal, arg string) (string, error) {
			md, err := ticketMarkdown(ctx, svc, p.Tenant, arg)
			if err != nil {
				return "", err
			}
			return "Summarize this ticket for a colleague who has not seen it, in a few sentences: the problem, what has been done and said so far, where it stands now, and the next step (and who should take it, if that is clear). Say what is unknown rather than guessing.\n\n" + md, nil
		})
	})
}

// prompt answers a prompts/get whose one argument is arg: the caller, who
// needs tickets:read, gets fill's text as one user message. An argument
// naming nothing of the caller's tenant (another tenant's ticket
// included) is invalid params, -32602.
func prompt(ctx context.Context, req *mcp.GetPromptRequest, arg string, fill func(authn.Principal, string) (string, error)) (*mcp.GetPromptResult, error) {
	p, err := readCaller(ctx, req.Extra)
	if err != nil {
		return nil, err
	}
	value := strings.TrimSpace(req.Params.Arguments[arg])
	if value == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %s needs the argument %s", req.Params.Name, arg)}
	}
	text, err := fill(p, value)
	if k := errcode.Of(err); k == errcode.NotFound || k == errcode.InvalidInput {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s %s names nothing of your tenant: %s", arg, quote(value), errcode.Of(err).Message(err))}
	}
	if err != nil {
		return nil, serviceError(err)
	}
	return &mcp.GetPromptResult{
		Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}, nil
}

// triageText is the triage prompt's message for project id.
func triageText(ctx context.Context, svc *tickets.Service, p authn.Principal, id string) (string, error) {
	pr, err := findProject(ctx, svc, p.Tenant, id)
	if err != nil {
		return "", err
	}
	open, more, err := openTickets(ctx, svc, p, pr.ID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Triage the open tickets of project %s (%s, id %s). For each ticket below, decide its priority (low, normal, high or urgent) and who should take it; "+
		"read a ticket in full with get_ticket before changing it. Change a ticket with update_ticket, passing if_version (the version you read) and a fresh operation_id per change; "+
		"making a ticket urgent asks a person's approval. Propose the changes to the user first, then make the ones they agree to.\n", pr.Name, pr.Key, pr.ID)
	writeOpenTickets(&b, open, more)
	return b.String(), nil
}
