package mcpedge

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/buildinfo"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/reqinfo"
)

// Protocol2026 is the first MCP protocol version whose results carry a
// resultType and the server's identity in _meta (SEP-2322, SEP-2575), and
// whose HTTP transport maps JSON-RPC errors to HTTP statuses (SEP-2575);
// versions are dates, so they compare as strings.
const Protocol2026 = "2026-07-28"

// JSON-RPC error codes, from the range JSON-RPC leaves to servers, for
// refusals no tool result can carry (a tools/list, or a request refused
// before its body, and so its id, is read).
const (
	// codeRateLimited: a tenant limit refused the request (the "server
	// error" code JSON-RPC reserves for implementations; data.code says
	// rate_limited).
	codeRateLimited = -32000
	// codeUnavailable: a budget every tenant shares is spent.
	codeUnavailable = -32030
)

// ServerInfo is the server's identity, as initialize and (from
// 2026-07-28) every result's _meta name it.
func ServerInfo() *mcp.Implementation {
	return &mcp.Implementation{Name: "ticketd", Title: "ticketd", Version: buildinfo.Version()}
}

// Reply is the answer CheckMessage gives in place of the SDK: either a
// JSON-RPC error or a tools/call result with isError.
type Reply struct {
	// Body is one JSON-RPC response message.
	Body []byte
	// Code is the JSON-RPC error code, or 0 for an isError tool result.
	Code int64
}

// NoteRefusal records, for the access log and the request metrics, that
// the edge answered the MCP request r (asking for call) itself with the
// contract code: its tool as the route and the code with why. The server's
// counting middleware reads it back (reqinfo), so a refusal the SDK never
// saw is counted and logged with its tenant and code like REST's.
func NoteRefusal(r *http.Request, call Call, code errcode.Code, why string) {
	info := reqinfo.From(r.Context())
	if call.Tool != "" {
		info.SetRoute(call.Tool)
	}
	info.SetError(string(code), errors.New(why))
}

// rpcError builds a JSON-RPC error response; a nil id is sent as null.
func rpcError(id json.RawMessage, code int64, message string) *Reply {
	return &Reply{Body: RPCError(id, code, message), Code: code}
}

// RPCError is the body of a JSON-RPC error response to the request with
// id. It always names the id, null when the request's is unknown (JSON-RPC
// 2.0 §5: "id" is REQUIRED in a response), where the SDK's encoder leaves a
// zero id out.
func RPCError(id json.RawMessage, code int64, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	return body
}

// contractError is the "error" member of a tool error result (docs/contract.md#error-codes).
type contractError struct {
	Code      errcode.Code `json:"code"`
	Message   string       `json:"message"`
	Retryable bool         `json:"retryable"`
	// RetryAfterMS is set with rate_limited.
	RetryAfterMS *int64 `json:"retry_after_ms,omitempty"`
}

// toolError builds the tools/call result the tools themselves give for
// invalid_input (docs/contract.md#error-codes), so a model reads one shape whoever refused.
func toolError(call Call, message string) *Reply {
	return toolResult(call, contractError{Code: errcode.InvalidInput, Message: message, Retryable: errcode.InvalidInput.Retryable()},
		string(errcode.InvalidInput)+": "+message+". Fix the input and call again; nothing was attempted.")
}

// toolResult builds the answer to call: a tools/call result with isError
// carrying e, and text as its one text block, shaped as the SDK shapes its
// own results for the call's protocol version: from 2026-07-28 on with
// resultType "complete" (without it the TypeScript SDK's v2 client refuses
// the result) and the server's identity in _meta.
//
// Its types are concrete and the _meta is encoded once (serverInfoMeta):
// a flood's every refusal is one of these.
func toolResult(call Call, e contractError, text string) *Reply {
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type structured struct {
		Error contractError `json:"error"`
	}
	type result struct {
		Meta              json.RawMessage `json:"_meta,omitempty"`
		Content           [1]content      `json:"content"`
		StructuredContent structured      `json:"structuredContent"`
		IsError           bool            `json:"isError"`
		ResultType        string          `json:"resultType,omitempty"`
	}
	r := result{
		Content:           [1]content{{Type: "text", Text: text}},
		StructuredContent: structured{Error: e},
		IsError:           true,
	}
	if call.Version >= Protocol2026 {
		r.Meta = serverInfoMeta()
		r.ResultType = "complete"
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  result          `json:"result"`
	}{"2.0", call.ID, r})
	return &Reply{Body: body}
}

// serverInfoMeta is the _meta of a 2026-07-28 result: the server's
// identity, which does not change while it runs.
var serverInfoMeta = sync.OnceValue(func() json.RawMessage {
	meta, _ := json.Marshal(map[string]*mcp.Implementation{mcp.MetaKeyServerInfo: ServerInfo()})
	return meta
})

// Reject is the server.Reject for refusals on /mcp made before the body is
// read (server.Bodies: the upload bounds and the body budget), when no
// request id is known: a JSON-RPC error with id null whose data is the
// contract error
//
//	{"code","message","retryable","retry_after_ms"}
//
// retry_after_ms mirroring any Retry-After header, noted for the access log
// and metrics like every edge refusal (NoteRefusal). The Go client treats
// 429 and 503 as transient (the session survives, the call fails), and a
// JSON-RPC body keeps the session alive on the other statuses too.
func Reject(w http.ResponseWriter, r *http.Request, status int, code errcode.Code, message string) {
	NoteRefusal(r, Call{}, code, message)
	rpcCode := int64(jsonrpc.CodeInvalidRequest)
	switch code {
	case errcode.RateLimited:
		rpcCode = codeRateLimited
	case errcode.Unavailable:
		rpcCode = codeUnavailable
	}
	e := contractError{Code: code, Message: message, Retryable: code.Retryable()}
	// Whole seconds, as Retry-After says.
	if secs, err := strconv.ParseInt(w.Header().Get("Retry-After"), 10, 64); err == nil {
		ms := secs * 1000
		e.RetryAfterMS = &ms
	}
	writeReply(w, status, rpcContractError(nil, rpcCode, e))
}

// rpcContractError builds a JSON-RPC error response to the request with
// id (null when nil) whose data is the contract error e.
func rpcContractError(id json.RawMessage, rpcCode int64, e contractError) *Reply {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(e)
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: rpcCode, Message: string(e.Code) + ": " + e.Message, Data: data}})
	return &Reply{Body: body, Code: rpcCode}
}
