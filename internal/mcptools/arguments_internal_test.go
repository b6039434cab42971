package mcptools

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// argumentCorpus are arguments every tool is called with: none, null,
// empty, misspelt, mistyped, and numbers in every spelling JSON allows.
var argumentCorpus = []string{
	"", `null`, `{}`, ` { } `, `{"Title":"x"}`, `{"ID":"SUP-1"}`, `{"tenant_id":"globex"}`,
	`{"limit":20}`, `{"limit":20.0}`, `{"limit":2e1}`, `{"limit":20.5}`, `{"limit":-0}`, `{"limit":0}`,
	`{"limit":1e400}`, `{"limit":"20"}`, `{"limit":null}`, `{"limit":true}`, `{"limit":[]}`,
	`{"id":"SUP-1","limit":10.0}`, `{"id":"SUP-1","limit":1E1,"cursor":"x"}`, `{"id":"SUP-1","limit":1000000000000000000000}`,
	`{"id":"SUP-1"}`, `{"id":""}`, `{"id":"SUP-1","id2":1}`, `{"id":"\u0053UP-1 <&>"}`, `{"id":5}`,
}

// toolArguments are arguments that fit (or nearly fit) one tool.
var toolArguments = map[string][]string{
	ToolCreateTicket: {
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","project_id":"support","title":"Printer on fire","labels":["hardware"]}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","project_id":"support","title":"x","priority":"high","description":"1.5e3 <b>&amp;</b> \u00e9\n\"q\""}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","project_id":"support","Title":"x"}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","project_id":"support","title":"x","TITLE":"y"}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","project_id":"support","title":"x","priority":"HIGH"}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","project_id":"support","title":"x","priority":null}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","project_id":"support","title":"x","labels":[]}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","project_id":"support","title":"x","labels":[1.0]}`,
		`{"operation_id":"not-a-uuid","project_id":"support","title":"x"}`,
		`{"project_id":"support","title":"x"}`,
	},
	ToolUpdateTicket: {
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","title":"New"}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","if_version":3,"status":"closed","add_labels":["a"]}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","if_version":3.0}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","if_version":3e0}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","if_version":999999999999999}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","if_version":9007199254740993}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","if_version":10000000000000000000}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","if_version":1e19}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","if_version":0}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","if_version":1.5}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","assignee":""}`,
	},
	ToolBulkUpdateTickets: {
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","ids":["SUP-1","SUP-2"],"status":"closed"}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","ids":["SUP-1"],"if_versions":{"SUP-1":2}}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","ids":["SUP-1"],"if_versions":{"SUP-1":2.0,"sup-1":3}}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","ids":["SUP-1"],"if_versions":{"SUP-1":0}}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","ids":[],"priority":"low"}`,
	},
	ToolListTickets: {
		`{"project_id":"support","limit":20}`, `{"status":"open"}`, `{"status":["open","closed"]}`, `{"status":[ "open" ]}`,
		`{"status":[]}`, `{"status":["open","open"]}`, `{"status":"OPEN"}`, `{"updated_since":"2026-01-02T03:04:05Z","sort":"created_desc"}`,
		`{"detail":"full","limit":100.0,"query":"printer \"fire\""}`,
	},
	ToolListComments: {`{"id":"SUP-1","limit":50}`, `{"id":"SUP-1","limit":201}`, `{"id":"SUP-1","cursor":""}`},
	ToolAddComment: {
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","body":"Looked at it."}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","body":""}`,
	},
	ToolListUsers: {`{}`, `{"query":"bob"}`, `{"query":7}`},
	ToolLinkTickets: {
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","link":"blocks","target":"SUP-2"}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","link":"duplicated_by","target":"SUP-2","remove":true}`,
		`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","id":"SUP-1","link":"parent_of","target":"SUP-2"}`,
	},
	ToolGetOperationStatus: {`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f"}`, `{"operation_id":"0190A6E5-3F2B-7C1D-9E4F-5A6B7C8D9E0F"}`},
	ToolPreviewTicket: {
		`{"project_id":"support","title":"x"}`, `{"project_id":"support","title":"x","priority":"urgent","operation_id":""}`,
	},
}

// TestArgumentsAreReadAsTheSDKReadsThem calls every tool's argument
// decoding and the SDK's typed mcp.AddTool path, which it replaces, with
// the same arguments: both give the same input value, or the same error
// text, or both panic (null arguments to a tool with defaults).
func TestArgumentsAreReadAsTheSDKReadsThem(t *testing.T) {
	t.Parallel()
	sameAsSDK[CreateTicketIn](t, ToolCreateTicket)
	sameAsSDK[PreviewTicketIn](t, ToolPreviewTicket)
	sameAsSDK[GetOperationStatusIn](t, ToolGetOperationStatus)
	sameAsSDK[GetTicketIn](t, ToolGetTicket)
	sameAsSDK[ListTicketsIn](t, ToolListTickets)
	sameAsSDK[ListProjectsIn](t, ToolListProjects)
	sameAsSDK[UpdateTicketIn](t, ToolUpdateTicket)
	sameAsSDK[AddCommentIn](t, ToolAddComment)
	sameAsSDK[ListCommentsIn](t, ToolListComments)
	sameAsSDK[BulkUpdateTicketsIn](t, ToolBulkUpdateTickets)
}

func sameAsSDK[In any](t *testing.T, tool string) {
	t.Helper()
	var def *mcp.Tool
	for _, x := range Tools() {
		if x.Name == tool {
			def = x.Def()
		}
	}
	if def == nil {
		t.Fatalf("no tool %s", tool)
	}
	schema, err := json.Marshal(def.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	ours := newArguments(tool, schema)

	s := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "v0"}, nil)
	got := make(chan In, 1)
	mcp.AddTool(s, &mcp.Tool{Name: tool, InputSchema: json.RawMessage(schema)}, func(_ context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		got <- in
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	s.AddReceivingMiddleware(recoverPanics(slog.New(slog.DiscardHandler)))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	for _, raw := range append(append([]string(nil), argumentCorpus...), toolArguments[tool]...) {
		params := &mcp.CallToolParams{Name: tool}
		if raw != "" {
			params.Arguments = json.RawMessage(raw)
		}
		res, err := cs.CallTool(t.Context(), params)
		if err != nil {
			t.Fatalf("%s %s: %v", tool, raw, err)
		}
		sdkText := res.Content[0].(*mcp.TextContent).Text
		in, bad, panicked := decodeOrPanic[In](ours, json.RawMessage(raw))
		switch {
		case panicked || strings.Contains(sdkText, "arguments must be a JSON object"):
			if !panicked || !res.IsError {
				t.Errorf("%s %s: we panicked %v, the SDK answered %q", tool, raw, panicked, sdkText)
			}
		case res.IsError || bad != nil:
			ourText := ""
			if bad != nil {
				ourText = bad.Content[0].(*mcp.TextContent).Text
			}
			if bad == nil || !res.IsError || !bad.IsError || unordered(ourText) != unordered(sdkText) {
				t.Errorf("%s %s:\n SDK error %v %q\nours %q %+v", tool, raw, res.IsError, sdkText, ourText, in)
			}
		default:
			if sdkIn := <-got; !reflect.DeepEqual(in, sdkIn) {
				t.Errorf("%s %s:\n SDK %#v\nours %#v", tool, raw, sdkIn, in)
			}
		}
	}
}

// unordered sorts the list in a validator's "unexpected additional
// properties [...]", which it builds in a map's order.
func unordered(msg string) string {
	start, end := strings.Index(msg, "properties ["), strings.LastIndex(msg, "]")
	if start < 0 || end < start {
		return msg
	}
	start += len("properties [")
	names := strings.Fields(msg[start:end])
	slices.Sort(names)
	return msg[:start] + strings.Join(names, " ") + msg[end:]
}

func decodeOrPanic[In any](a arguments, raw json.RawMessage) (in In, bad *mcp.CallToolResult, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	in, bad = decodeArguments[In](a, raw)
	return in, bad, false
}

func TestPlainNumbers(t *testing.T) {
	t.Parallel()
	for b, want := range map[string]bool{
		`{}`: true, `{"a":1,"b":-12,"c":[0,123456789012345]}`: true, `{"a":true,"b":false,"c":null}`: true,
		`{"a":"1.5e3","b\"1.0":"\\"}`: true, `{"a":-0}`: true,
		`{"a":1.0}`: false, `{"a":1e1}`: false, `{"a":1E1}`: false, `{"a":-1.5}`: false,
		`{"a":1234567890123456}`: false, `{"a":[true,2.5]}`: false,
	} {
		if got := plainNumbers([]byte(b)); got != want {
			t.Errorf("plainNumbers(%s) = %v, want %v", b, got, want)
		}
	}
}

// BenchmarkArguments reads create_ticket's arguments (as BenchmarkMCPServer
// sends them: priority left to its default) as the SDK's typed path reads
// them (sdk, its steps in mcp/tool.go applySchema and mcp/server.go
// toolForErr, copied) and as the tools do (ours):
//
//	go test -run '^$' -bench Arguments -benchmem ./internal/mcptools/
func BenchmarkArguments(b *testing.B) {
	schema, err := json.Marshal(createTicket.Def().InputSchema)
	if err != nil {
		b.Fatal(err)
	}
	a := newArguments(ToolCreateTicket, schema)
	raw := json.RawMessage(`{"operation_id":"0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f","project_id":"support","title":"Printer on fire","labels":["hardware"]}`)
	for _, c := range []struct {
		name   string
		decode func(arguments, json.RawMessage) (CreateTicketIn, error)
	}{
		{"sdk", typedPath[CreateTicketIn]},
		{"ours", func(a arguments, raw json.RawMessage) (CreateTicketIn, error) {
			in, bad := decodeArguments[CreateTicketIn](a, raw)
			if bad != nil {
				return in, bad.GetError()
			}
			return in, nil
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.decode(a, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// typedPath is what the SDK's typed handler does with the arguments before
// it calls the handler: decode into a map with its decoder, apply defaults,
// validate, encode, decode into In.
func typedPath[In any](a arguments, raw json.RawMessage) (In, error) {
	var in In
	v := make(map[string]any)
	if err := sdkUnmarshal(raw, &v); err != nil {
		return in, err
	}
	var instance any = v
	if err := a.schema.ApplyDefaults(&instance); err != nil {
		return in, err
	}
	if err := a.schema.Validate(&instance); err != nil {
		return in, err
	}
	data, err := json.Marshal(instance)
	if err != nil {
		return in, err
	}
	return in, sdkUnmarshal(data, &in)
}
