package mcptools

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// The package's tests validate every structured result any tool answers
// against that tool's strict output schema (the advertised one, compact,
// with its objects closed and their members required), as the SDK would on every
// call if the tools let it (structured). TestMain then checks that the
// results seen covered every member each schema declares, success and
// error branch alike, so that no shape a tool can answer went unchecked.
// A run narrowed with -run checks only what it sees; a run with -bench
// checks nothing, so that benchmarks measure what production runs.
func TestMain(m *testing.M) {
	flag.Parse()
	checking := flag.Lookup("test.bench").Value.String() == ""
	if checking {
		checkOutput = outputs.check
	}
	code := m.Run()
	if checking && code == 0 && flag.Lookup("test.run").Value.String() == "" {
		if missing := outputs.unexercised(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "no validated tool result carried these output schema members (tool: branch.path):\n  %s\n",
				strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// notFromTools are the members only the edge answers (edge.CheckMessage,
// the rate limiter), never a tool's handler. TestEveryErrorFitsEveryToolAtBothVersions
// validates those answers against every tool's schema.
var notFromTools = []string{"error.error.retry_after_ms"}

// outputs is the package's record of validated results.
var outputs = &outputLog{seen: map[string]map[string]bool{}}

type outputLog struct {
	once    sync.Once
	schemas map[string]*jsonschema.Schema
	checks  map[string]*jsonschema.Resolved
	err     error

	mu   sync.Mutex
	seen map[string]map[string]bool // tool → branch.path
}

// load resolves every tool's output schema as tools/list shows it.
func (o *outputLog) load() error {
	o.once.Do(func() {
		o.schemas, o.checks = map[string]*jsonschema.Schema{}, map[string]*jsonschema.Resolved{}
		for _, t := range Tools() {
			b, err := json.Marshal(t.strictOutput)
			if err != nil {
				o.err = err
				return
			}
			var s jsonschema.Schema
			if err := json.Unmarshal(b, &s); err != nil {
				o.err = fmt.Errorf("%s output schema: %w", t.Name, err)
				return
			}
			r, err := s.Resolve(nil)
			if err != nil {
				o.err = fmt.Errorf("%s output schema: %w", t.Name, err)
				return
			}
			o.schemas[t.Name], o.checks[t.Name] = &s, r
		}
	})
	return o.err
}

// check validates one result's structured content and records which
// members it carried.
func (o *outputLog) check(tool string, isError bool, content []byte) error {
	if err := o.load(); err != nil {
		return err
	}
	s, ok := o.schemas[tool]
	if !ok {
		return fmt.Errorf("tool %s has no output schema", tool)
	}
	var v any
	if err := json.Unmarshal(content, &v); err != nil {
		return err
	}
	if err := o.checks[tool].Validate(v); err != nil {
		return fmt.Errorf("%s: %w: %s", tool, err, content)
	}
	branch, name := s.AnyOf[0], "ok"
	if isError {
		branch, name = s.AnyOf[1], "error"
	}
	paths := map[string]bool{}
	carried(s, branch, v, name, paths)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[tool] == nil {
		o.seen[tool] = map[string]bool{}
	}
	maps.Copy(o.seen[tool], paths)
	return nil
}

// unexercised lists the members declared by some tool's schema that no
// validated result carried.
func (o *outputLog) unexercised() []string {
	if err := o.load(); err != nil {
		return []string{err.Error()}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var missing []string
	for tool, s := range o.schemas {
		declared := map[string]bool{}
		declares(s, s.AnyOf[0], "ok", declared, nil)
		declares(s, s.AnyOf[1], "error", declared, nil)
		for path := range declared {
			if !o.seen[tool][path] && !slices.Contains(notFromTools, path) {
				missing = append(missing, tool+": "+path)
			}
		}
	}
	slices.Sort(missing)
	return missing
}

// deref follows a reference into root's $defs.
func deref(root, s *jsonschema.Schema) (*jsonschema.Schema, string) {
	if name, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok {
		return root.Defs[name], name
	}
	return s, ""
}

// declares adds to out the path of every member s declares under path:
// object properties as .name, a map's values as .*, array items as [].
func declares(root, s *jsonschema.Schema, path string, out map[string]bool, refs []string) {
	s, ref := deref(root, s)
	if ref != "" {
		if slices.Contains(refs, ref) {
			return
		}
		refs = append(refs, ref)
	}
	for name, p := range s.Properties {
		out[path+"."+name] = true
		declares(root, p, path+"."+name, out, refs)
	}
	if a := s.AdditionalProperties; a != nil && a.Not == nil {
		out[path+".*"] = true
		declares(root, a, path+".*", out, refs)
	}
	if s.Items != nil {
		declares(root, s.Items, path+"[]", out, refs)
	}
	for _, sub := range slices.Concat(s.AnyOf, s.OneOf, s.AllOf) {
		declares(root, sub, path, out, refs)
	}
}

// carried adds to out the path of every member s declares that v has.
func carried(root, s *jsonschema.Schema, v any, path string, out map[string]bool) {
	s, _ = deref(root, s)
	switch v := v.(type) {
	case map[string]any:
		for name, val := range v {
			if p, ok := s.Properties[name]; ok {
				out[path+"."+name] = true
				carried(root, p, val, path+"."+name, out)
			} else if a := s.AdditionalProperties; a != nil && a.Not == nil {
				out[path+".*"] = true
				carried(root, a, val, path+".*", out)
			}
		}
	case []any:
		if s.Items != nil {
			for _, item := range v {
				carried(root, s.Items, item, path+"[]", out)
			}
		}
	}
	for _, sub := range slices.Concat(s.AnyOf, s.OneOf, s.AllOf) {
		carried(root, sub, v, path, out)
	}
}

// TestRicherResultsFitTheirSchemas builds, with the same constructors the
// handlers use, the results this package's other tests cannot get from a
// server: tickets of a tracker-backed project (external_id, external_url),
// get_operation_status with deliveries (an outbox), a tracker's downstream
// and history, and a failed record, approval_required for every tool that
// can ask, version_conflict with its ticket, and every code of the error
// table for every tool. Each is checked as a tool's answer is.
func TestRicherResultsFitTheirSchemas(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Microsecond)
	tk := tickets.Ticket{
		Version: 3, Assignee: "sam", ID: uuid.Must(uuid.NewV7()), Key: "SUP-7", ProjectID: "support",
		Title: "Printer on fire", Description: "Third floor.", Priority: tickets.PriorityHigh, Status: tickets.StatusOpen,
		Labels: []string{"hardware"}, Reporter: "agent", CreatedAt: now, UpdatedAt: now,
		ExternalID: "acme/support#12", ExternalURL: "https://github.com/acme/support/issues/12",
	}
	full := contract.FromTicket(tk)
	opID := uuid.Must(uuid.NewV7())
	changes := contract.FromChanges(tickets.Changes{"title": {From: "Printer", To: "Printer on fire"}})
	check := func(tool string, isError bool, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := outputs.check(tool, isError, b); err != nil {
			t.Errorf("%s: %v", tool, err)
		}
	}
	ok := func(v any) outcome[any] { return outcome[any]{ok: &v} }

	check(ToolCreateTicket, false, ok(CreateTicketOut{OperationID: opID.String(), Status: "succeeded", TicketID: full.ID, Ticket: full}))
	check(ToolGetTicket, false, ok(GetTicketOut{Ticket: full, Links: []contract.Link{{Link: "blocked_by", ID: full.ID, Key: full.Key}}, Parent: &contract.TicketRef{ID: full.ID, Key: full.Key}, Children: contract.Children{Count: 1, Keys: []string{full.Key}}}))
	check(ToolListUsers, false, ok(ListUsersOut{Users: []contract.User{{ID: "bob", DisplayName: "Bob", Active: true, CreatedAt: tk.CreatedAt, UpdatedAt: tk.UpdatedAt}}}))
	check(ToolLinkTickets, false, ok(LinkTicketsOut{OperationID: opID.String(), Status: "succeeded", Changed: true, TicketID: full.ID,
		Links: []contract.Link{{Link: "blocks", ID: full.ID, Key: full.Key}}}))
	check(ToolListTickets, false, ok(ListTicketsOut{Tickets: []any{contract.SummaryOf(tk), full}, NextCursor: "next"}))
	check(ToolUpdateTicket, false, ok(UpdateTicketOut{OperationID: opID.String(), Status: "succeeded", TicketID: full.ID,
		Version: tk.Version, Changes: changes, Ticket: full}))
	check(ToolBulkUpdateTickets, false, ok(BulkUpdateTicketsOut{OperationID: opID.String(), Status: "succeeded",
		Tickets: []contract.BulkItem{{Key: full.Key, Version: tk.Version, Changes: changes}}}))
	check(ToolListComments, false, ok(ListCommentsOut{Comments: []contract.Comment{}, NextCursor: "next"}))
	next := now.Add(time.Minute)
	for _, status := range []operations.Status{operations.StatusPending, operations.StatusSucceeded, operations.StatusFailed, operations.StatusUnknown} {
		st := tickets.OperationStatus{
			Record: operations.Record{
				Key:         operations.Key{Tenant: "acme", Action: tickets.ActionCreateTicket, OperationID: opID},
				Fingerprint: strings.Repeat("a", 64), Status: status, ResultID: full.ID, CreatedAt: now, UpdatedAt: now,
			},
			TicketID: &tk.ID, Ticket: &tk,
			Deliveries: []tickets.Delivery{{WebhookID: uuid.Must(uuid.NewV7()), Status: "failed", Attempts: 2, LastError: "503 from the receiver"}},
			Downstream: &tickets.Downstream{System: "github", Status: tickets.DownstreamUnknown, ExternalID: tk.ExternalID,
				ExternalURL: tk.ExternalURL, Attempts: 1, LastError: "timeout", NextCheckAt: &next},
			History: []tickets.HistoryEntry{{Kind: "sent", Actor: "ticketd", Detail: "POST /repos/acme/support/issues", At: now}},
		}
		if status == operations.StatusFailed {
			st.Record.Error = "the tracker refused the issue"
		}
		check(ToolGetOperationStatus, false, ok(contract.FromOperation(st, operationNextStep)))
	}

	// Errors: every code for every tool, then the members only some
	// codes carry, for the tools whose schemas allow them.
	asks := &approval.RequiredError{Approval: approval.Approval{ID: "apr_1", ExpiresAt: now.Add(time.Hour)}, Mode: approval.ModeNone,
		URL: "https://ticketd.test/console/approvals/apr_1"}
	stale := &tickets.VersionConflictError{Expected: 1, Current: tk}
	if err := outputs.load(); err != nil {
		t.Fatal(err)
	}
	for _, tool := range Tools() {
		id := ""
		if tool.namesOperation {
			id = opID.String()
		}
		for _, row := range errcode.Table {
			_, out := errorResult(row.Code, row.Code.Message(errors.New("the cause")), id, errors.New("the cause"), "")
			check(tool.Name, true, out)
		}
		errSchema, _ := deref(outputs.schemas[tool.Name], outputs.schemas[tool.Name].AnyOf[1])
		if _, ok := errSchema.Properties["approval_url"]; ok {
			_, out, _ := failure[struct{}](asks, id)
			check(tool.Name, true, out)
		}
		if _, ok := errSchema.Properties["ticket"]; ok {
			_, out, _ := failure[struct{}](stale, id)
			check(tool.Name, true, out)
		}
	}
}
