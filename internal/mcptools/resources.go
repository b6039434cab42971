package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/tickets"
)

// The resource templates (docs/agents.md#resources): a ticket or a
// project as Markdown a client can put in the model's context. They read
// what get_ticket and list_tickets read, scoped to the caller's tenant.
const (
	TicketTemplate  = "ticket://{key}"
	ProjectTemplate = "project://{id}"

	ticketScheme  = "ticket://"
	projectScheme = "project://"
	markdown      = "text/markdown"
	// latestComments is how many comments a ticket resource shows, the
	// latest ones.
	latestComments = 10
	// projectTickets is how many open tickets a project resource and the
	// triage prompt show, the most urgent first.
	projectTickets = 50
)

// CodeResourceNotFound is the JSON-RPC error of a resource that does not
// exist for the caller's tenant: another tenant's ticket answers it
// exactly as one that exists nowhere.
const CodeResourceNotFound = -32002

func registerResources(s *mcp.Server, svc *tickets.Service) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "ticket", Title: "Ticket", URITemplate: TicketTemplate, MIMEType: markdown,
		Description: "A ticket by key (SUP-42) as Markdown: its fields, description and latest " + fmt.Sprint(latestComments) + " comments.",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return readResource(ctx, req, ticketScheme, func(p authn.Principal, key string) (string, error) {
			return ticketMarkdown(ctx, svc, p.Tenant, key)
		})
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "project", Title: "Project", URITemplate: ProjectTemplate, MIMEType: markdown,
		Description: "A project by id as Markdown: its key and name, and its open tickets, the most urgent first.",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return readResource(ctx, req, projectScheme, func(p authn.Principal, id string) (string, error) {
			return projectMarkdown(ctx, svc, p, id)
		})
	})
}

// readResource answers a resources/read of scheme: the caller, who needs
// tickets:read, gets read's Markdown of the name the URI carries; a name
// that is not the caller's tenant's is CodeResourceNotFound.
func readResource(ctx context.Context, req *mcp.ReadResourceRequest, scheme string, read func(authn.Principal, string) (string, error)) (*mcp.ReadResourceResult, error) {
	p, err := readCaller(ctx, req.Extra)
	if err != nil {
		return nil, err
	}
	uri := req.Params.URI
	name, err := url.PathUnescape(strings.TrimPrefix(uri, scheme))
	if err != nil || name == "" || strings.Contains(name, "/") {
		return nil, resourceNotFound(uri)
	}
	text, err := read(p, name)
	if k := errcode.Of(err); k == errcode.NotFound || k == errcode.InvalidInput {
		return nil, resourceNotFound(uri)
	}
	if err != nil {
		return nil, serviceError(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: markdown, Text: text}}}, nil
}

// resourceNotFoundCode gives the SDK's own answer to a URI that matches no
// template (-32602 since go-sdk 1.7) the contract's -32002, so no URI
// tells a caller more than another.
func resourceNotFoundCode() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			var wire *jsonrpc.Error
			if r, ok := req.(*mcp.ReadResourceRequest); ok && errors.As(err, &wire) && wire.Code != CodeResourceNotFound &&
				wire.Message == "Resource not found" && r.Params != nil {
				return nil, resourceNotFound(r.Params.URI)
			}
			return res, err
		}
	}
}

func resourceNotFound(uri string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: CodeResourceNotFound, Message: "Resource not found: nothing at " + quote(uri) + " for your tenant", Data: data}
}

// serviceError is the JSON-RPC error of a read that failed on ticketd's
// side: its contract code and whether to retry, in the message.
func serviceError(err error) error {
	code := errcode.Of(err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: %s (retryable: %v)", code, code.Message(err), code.Retryable())}
}

// readCaller returns the caller of a resources, prompts or completion
// request, who must hold tickets:read: these read what get_ticket reads.
func readCaller(ctx context.Context, extra *mcp.RequestExtra) (authn.Principal, error) {
	p, ok := principalOf(ctx, extra)
	switch {
	case !ok:
		return authn.Principal{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unauthenticated: no verified token came with this request"}
	case p.Expired(time.Now()):
		return authn.Principal{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unauthenticated: the token expired; get a new one"}
	case !p.HasScope(authn.ScopeRead):
		return authn.Principal{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "forbidden: this token lacks the " + authn.ScopeRead + " scope that reading tickets needs"}
	}
	return p, nil
}

// ticketMarkdown is the ticket resource: the ticket's fields, its
// description and its latest comments.
func ticketMarkdown(ctx context.Context, svc *tickets.Service, tenant, ref string) (string, error) {
	t, err := svc.GetTicket(ctx, tenant, ref)
	if err != nil {
		return "", err
	}
	comments, earlier, err := svc.LatestComments(ctx, tenant, t.ID.String(), latestComments)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	writeTicket(&b, t)
	switch {
	case len(comments) == 0:
		b.WriteString("\n## Comments\n\nNone yet.\n")
	case earlier:
		fmt.Fprintf(&b, "\n## Comments (the latest %d; list_comments has the earlier ones)\n", len(comments))
	default:
		b.WriteString("\n## Comments\n")
	}
	for _, c := range comments {
		fmt.Fprintf(&b, "\n**%s** at %s:\n\n%s\n", c.Author, c.CreatedAt.Format(time.RFC3339), c.Body)
	}
	return b.String(), nil
}

// writeTicket writes a ticket's heading, fields and description.
func writeTicket(b *strings.Builder, t tickets.Ticket) {
	fmt.Fprintf(b, "# %s: %s\n\n", t.Key, t.Title)
	field := func(name, value string) { fmt.Fprintf(b, "- %s: %s\n", name, value) }
	field("id", t.ID.String())
	field("project", t.ProjectID)
	field("status", string(t.Status))
	field("priority", string(t.Priority))
	field("assignee", assigneeText(t.Assignee))
	field("reporter", t.Reporter)
	if len(t.Labels) > 0 {
		field("labels", strings.Join(t.Labels, ", "))
	}
	field("version", fmt.Sprint(t.Version))
	field("created", t.CreatedAt.Format(time.RFC3339))
	field("updated", t.UpdatedAt.Format(time.RFC3339))
	if t.ExternalURL != "" {
		field("tracker issue", t.ExternalURL)
	}
	b.WriteString("\n## Description\n\n")
	if t.Description == "" {
		b.WriteString("None.\n")
	} else {
		b.WriteString(t.Description + "\n")
	}
}

func assigneeText(a string) string {
	if a == "" {
		return "unassigned"
	}
	return a
}

// projectMarkdown is the project resource: the project and its open
// tickets.
func projectMarkdown(ctx context.Context, svc *tickets.Service, p authn.Principal, id string) (string, error) {
	pr, err := findProject(ctx, svc, p.Tenant, id)
	if err != nil {
		return "", err
	}
	open, more, err := openTickets(ctx, svc, p, pr.ID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Project %s: %s\n\n- id (project_id): %s\n- key: %s (tickets %s-1, %s-2, …)\n", pr.Key, pr.Name, pr.ID, pr.Key, pr.Key, pr.Key)
	if pr.Backend != nil {
		// Where names the repository or the Jira project; a Jira project
		// key means something only with its site.
		fmt.Fprintf(&b, "- tracker: %s %s", pr.Backend.Kind, pr.Backend.Where())
		if pr.Backend.Site != "" {
			fmt.Fprintf(&b, " on %s", pr.Backend.Site)
		}
		b.WriteString("\n")
	}
	writeOpenTickets(&b, open, more)
	return b.String(), nil
}

// findProject returns the tenant's project id; another tenant's is not
// found, as one that exists nowhere.
func findProject(ctx context.Context, svc *tickets.Service, tenant, id string) (tickets.Project, error) {
	ps, err := svc.ListProjects(ctx, tenant)
	if err != nil {
		return tickets.Project{}, err
	}
	for _, pr := range ps {
		if pr.ID == id {
			return pr, nil
		}
	}
	return tickets.Project{}, fmt.Errorf("project %s: %w", quote(id), tickets.ErrNotFound)
}

// openTickets returns the project's open tickets, the most urgent first,
// up to projectTickets, and whether there are more.
func openTickets(ctx context.Context, svc *tickets.Service, p authn.Principal, projectID string) ([]tickets.Ticket, bool, error) {
	page, err := svc.ListTickets(ctx, tickets.Caller{Tenant: p.Tenant, Subject: p.Subject}, tickets.ListTicketsParams{
		ProjectID: projectID, Statuses: []tickets.Status{tickets.StatusOpen}, Sort: tickets.SortPriorityDesc,
		Limit: projectTickets, MaxBytes: pageItemsBudget, WithoutDescriptions: true,
	})
	return page.Tickets, page.NextCursor != "", err
}

// writeOpenTickets lists tickets one line each: key, priority, assignee,
// title.
func writeOpenTickets(b *strings.Builder, open []tickets.Ticket, more bool) {
	switch {
	case len(open) == 0:
		b.WriteString("\n## Open tickets\n\nNone.\n")
		return
	case more:
		fmt.Fprintf(b, "\n## Open tickets (the %d most urgent; list_tickets has the rest)\n\n", len(open))
	default:
		b.WriteString("\n## Open tickets\n\n")
	}
	for _, t := range open {
		fmt.Fprintf(b, "- %s [%s] %s: %s\n", t.Key, t.Priority, assigneeText(t.Assignee), t.Title)
	}
}
