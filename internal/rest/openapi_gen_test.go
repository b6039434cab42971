package rest_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/rest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/webhooks"
)

var update = flag.Bool("update", false, "regenerate the generated parts of openapi.json")

// TestOpenAPIIsGenerated keeps openapi.json's contract-bearing parts (the
// request and response schemas, their limits and vocabularies) exactly what
// the Go types and the tickets package's limits say; the prose and the paths
// are written by hand and checked against the routes by
// TestOpenAPIMatchesRoutes, and the error codes are added from errcode.Table
// when the document is served. Run with -update after changing a type or a
// limit.
func TestOpenAPIIsGenerated(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := generateOpenAPI(raw)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("openapi.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, raw) {
		t.Error("openapi.json differs from what the Go types and limits generate; run go test ./internal/rest -run TestOpenAPIIsGenerated -update")
	}
}

// generateOpenAPI returns doc with its generated parts rewritten.
func generateOpenAPI(raw []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	components := doc["components"].(map[string]any)
	schemas := components["schemas"].(map[string]any)
	parameters := components["parameters"].(map[string]any)

	described := func(name string, s *jsonschema.Schema) error {
		// A hand-written description of the whole object is kept.
		if old, ok := schemas[name].(map[string]any); ok && s.Description == "" {
			s.Description, _ = old["description"].(string)
		}
		v, err := asJSON(s)
		schemas[name] = v
		return err
	}
	for name, s := range map[string]*jsonschema.Schema{
		"NewTicket":           contract.TicketFieldsSchema(),
		"TicketUpdate":        contract.TicketUpdateFieldsSchema(),
		"BulkUpdate":          contract.BulkUpdateFieldsSchema(),
		"BulkResult":          contract.BulkResultSchema(),
		"NewComment":          contract.CommentFieldsSchema(),
		"Comment":             contract.CommentSchema(),
		"NewLink":             contract.LinkFieldsSchema(),
		"LinkList":            contract.LinkListSchema(),
		"User":                contract.Infer[contract.User](),
		"UserList":            contract.Infer[contract.UserList](),
		"NewUser":             contract.Infer[contract.NewUser](),
		"UserPatch":           contract.Infer[contract.UserPatch](),
		"Event":               contract.EventSchema(),
		"Ticket":              contract.TicketSchema(),
		"TicketWithFamily":    contract.TicketWithFamilySchema(),
		"TicketSummary":       contract.TicketSummarySchema(),
		"Project":             contract.Infer[contract.Project](),
		"OperationStatus":     contract.OperationStatusSchema(contract.OperationStatuses...),
		"Priority":            {Type: "string", Enum: contract.StringEnum(tickets.Priorities...)},
		"TicketStatus":        {Type: "string", Enum: contract.StringEnum(tickets.Statuses...)},
		"NewWebhook":          newWebhookSchema(),
		"Webhook":             contract.Infer[rest.Webhook](),
		"WebhookList":         contract.Infer[rest.WebhookList](),
		"WebhookDelivery":     contract.Infer[rest.WebhookDelivery](),
		"WebhookDeliveryList": contract.Infer[rest.WebhookDeliveryList](),
		"Resolution":          resolutionSchema(),
		"Backend":             contract.Infer[contract.Backend](),
		"Approval":            contract.Infer[rest.Approval](),
	} {
		if err := described(name, s); err != nil {
			return nil, err
		}
	}
	// The codes are served from errcode.Table (openAPIDocument), never
	// stored: a new code needs no -update.
	problem := schemas["Problem"].(map[string]any)["properties"].(map[string]any)
	delete(problem["code"].(map[string]any), "enum")

	setSchema := func(param string, s *jsonschema.Schema) error {
		v, err := asJSON(s)
		parameters[param].(map[string]any)["schema"] = v
		return err
	}
	limit := &jsonschema.Schema{Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(tickets.MaxLimit)),
		Default: json.RawMessage(fmt.Sprint(tickets.DefaultLimit))}
	for param, s := range map[string]*jsonschema.Schema{
		"Limit":                 limit,
		"ProjectIDFilter":       {Type: "string", MaxLength: jsonschema.Ptr(tickets.MaxProjectID)},
		"QueryFilter":           {Type: "string", MaxLength: jsonschema.Ptr(tickets.MaxQuery)},
		"AssigneeFilter":        {Type: "string", MaxLength: jsonschema.Ptr(tickets.MaxAssignee)},
		"LabelFilter":           {Type: "string", MaxLength: jsonschema.Ptr(tickets.MaxLabel)},
		"OperationStatusFilter": {Type: "string", Enum: contract.StringEnum(contract.LedgerStatuses...)},
		"TicketLimit": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(tickets.MaxTicketLimit)),
			Default: json.RawMessage(fmt.Sprint(tickets.DefaultTicketLimit))},
		"TicketSort":   {Type: "string", Enum: contract.StringEnum(tickets.Sorts...)},
		"TicketDetail": {Type: "string", Enum: []any{contract.DetailSummary, contract.DetailFull}, Default: json.RawMessage(`"` + contract.DetailFull + `"`)},
	} {
		if err := setSchema(param, s); err != nil {
			return nil, err
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// newWebhookSchema is the registration body with its event vocabulary.
func newWebhookSchema() *jsonschema.Schema {
	s := contract.Infer[rest.NewWebhook]()
	s.Properties["events"].Items.Enum = contract.StringEnum(webhooks.EventTypes...)
	return s
}

// asJSON turns a schema into the generic value the document holds.
func asJSON(s *jsonschema.Schema) (any, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// resolutionSchema is the resolve body with its outcome vocabulary.
func resolutionSchema() *jsonschema.Schema {
	s := contract.Infer[rest.Resolution]()
	s.Properties["outcome"].Enum = contract.StringEnum(tickets.ResolveSucceeded, tickets.ResolveNotCreated)
	s.Properties["reason"].MinLength, s.Properties["reason"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(tickets.MaxReason)
	return s
}
