package mcptools

import (
	"slices"
	"strings"

	"github.com/ticketd/ticketd/internal/authn"
)

// instruction is one sentence of a server's instructions and the tools it
// names: it is said only by a server that offers them all.
type instruction struct {
	text  string
	tools []string
	// writes: said only by a server that offers some write; reads: only by
	// one that offers none.
	writes, reads bool
}

// instructionSentences is what a client may put in the model's context once
// per connection: the retry contract in a few sentences, so a model that
// reads only this still uses operation_id correctly. Each sentence names
// only tools that the server offers (instructionsFor).
var instructionSentences = []instruction{
	{text: "ticketd files support tickets for your organisation (the tenant is fixed by your access token)."},
	{text: "To create a ticket: pick a project_id from list_projects, generate a fresh random UUID (version 4 or 7) as operation_id for that one intended ticket, and call create_ticket.",
		tools: []string{ToolListProjects, ToolCreateTicket}},
	{text: "If a call times out, fails with a retryable error, or you are unsure whether it went through, call create_ticket again with the SAME operation_id and the SAME arguments: it never creates a duplicate and returns the original ticket with replayed: true.",
		tools: []string{ToolCreateTicket}},
	{text: "Never change the operation_id to make a retry go through; a new operation_id means a new ticket.",
		tools: []string{ToolCreateTicket}},
	{text: "Every write takes an operation_id, a fresh random UUID per intended change: if you are unsure whether it went through, retry with the SAME operation_id and arguments, never a new one.",
		writes: true},
	{text: "get_operation_status answers authoritatively whether a ticket was created under an operation_id; preview_ticket is a dry run that writes nothing.",
		tools: []string{ToolGetOperationStatus, ToolPreviewTicket, ToolCreateTicket}},
	{text: "This server only reads: it cannot create or change tickets.", reads: true},
}

// instructionsFor is the instructions of a server that offers tools.
func instructionsFor(tools []Tool) string {
	names := make([]string, 0, len(tools))
	writes := false
	for _, t := range tools {
		names = append(names, t.Name)
		writes = writes || t.Scope != authn.ScopeRead
	}
	var out []string
	for _, s := range instructionSentences {
		switch {
		case s.writes && (!writes || slices.Contains(names, ToolCreateTicket)),
			s.reads && writes,
			slices.ContainsFunc(s.tools, func(t string) bool { return !slices.Contains(names, t) }):
			continue
		}
		out = append(out, s.text)
	}
	return strings.Join(out, "\n")
}
