package mcpedge

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/internal/limits"
)

// EarlyLimitsOptions configures EarlyLimits.
type EarlyLimitsOptions struct {
	// Limits holds the tenants' buckets. Required.
	Limits *limits.Tenants
	// Tenant returns the verified caller's tenant. Required.
	Tenant func(ctx context.Context) (string, bool)
	// KindFor says which bucket a tool draws from. Required.
	KindFor func(tool string) limits.Kind
	// ScopeFor and Scopes say whether the token may call the tool at all
	// (as StepUp decides). Required.
	ScopeFor ScopeFor
	Scopes   func(ctx context.Context) []string
}

// EarlyLimits refuses a tools/call while its tenant's bucket for the tool
// is empty before the message is checked in full (Body, CheckMessage),
// which costs most of a refusal's CPU: a flood that ignores retry_after
// then costs the server little more than a refusal at the concurrency cap.
// It goes after Bodies, which read the body (HeldBody), and before Body.
//
// It looks only while one of the tenant's buckets is empty (a lock and a
// map look-up otherwise), reads the envelope in one pass that allocates
// nothing but the names it keeps (peekCall), and refuses only when that
// pass is sure the message is a tools/call, with an id, of a tool the
// token may call and whose bucket is empty; anything else goes on to the
// full checks and to Limits, which still draws from the bucket for
// every call that gets that far. So no call passes that Limits would
// refuse, and a call refused here is one Limits would refuse in the
// same words (or one the full checks would refuse as invalid).
func EarlyLimits(opts EarlyLimitsOptions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if call, wait, refuse := opts.refuse(r); refuse {
				refuseMCP(w, r, call, opts.Limits.Hold(r.Context(), wait), "this tenant's rate limit for this kind of call is reached")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// refuse decides EarlyLimits: whether r is sure to be refused by Limits,
// and the wait to name.
func (opts EarlyLimitsOptions) refuse(r *http.Request) (Call, time.Duration, bool) {
	held, isHeld := r.Body.(HeldBody)
	tenant, ok := opts.Tenant(r.Context())
	if !isHeld || !ok {
		return Call{}, 0, false
	}
	writes, waitW := opts.Limits.Spent(tenant, limits.Write)
	reads, waitR := opts.Limits.Spent(tenant, limits.Read)
	if !writes && !reads {
		return Call{}, 0, false
	}
	call, sure := peekCall(held.Held())
	if !sure || call.Method != "tools/call" || call.ID == nil || !opts.mayCall(r.Context(), call.Tool) {
		return Call{}, 0, false
	}
	if opts.KindFor(call.Tool) == limits.Write {
		return call, waitW, writes
	}
	return call, waitR, reads
}

// mayCall reports whether the token's scopes cover tool, a tool this
// server serves: otherwise StepUp answers (403 or the SDK's unknown tool),
// not a rate limit.
func (opts EarlyLimitsOptions) mayCall(ctx context.Context, tool string) bool {
	scope, known := opts.ScopeFor(tool)
	return known && slices.Contains(opts.Scopes(ctx), scope)
}

// peekCall reads a JSON-RPC request's method, id, params.name and protocol
// version in one pass over msg, and says whether it is sure: false for
// anything that is not valid UTF-8 and one JSON object, for a member of
// interest that appears twice, is not of the expected type or is spelt
// with escapes (keys compare exactly, as CheckMessage and the SDK compare
// them), and for an id CheckMessage would refuse. Values it does not keep
// are skipped, not decoded. The finer checks (duplicate keys deeper down,
// lone surrogates, arguments that are no object) are CheckMessage's: a
// message that fails them may be answered rate_limited here first, and is
// refused either way.
func peekCall(msg []byte) (Call, bool) {
	if !json.Valid(msg) || !utf8.Valid(msg) {
		return Call{}, false
	}
	var c Call
	p := peeker{b: msg}
	seen := map[string]bool{}
	ok := p.object(func(key string) bool {
		if seen[key] {
			return false
		}
		seen[key] = true
		switch key {
		case "id":
			start := p.i
			if !p.value() {
				return false
			}
			c.ID = json.RawMessage(msg[start:p.i])
			return true
		case "method":
			return p.plainString(&c.Method)
		case "params":
			return p.params(&c)
		}
		return p.value()
	})
	if !ok {
		return Call{}, false
	}
	if string(c.ID) == "null" {
		c.ID = nil
	}
	// A string or an integer CheckMessage accepts: the answer echoes it.
	if len(c.ID) > 0 && c.ID[0] != '"' && c.ID[0] != '-' && (c.ID[0] < '0' || c.ID[0] > '9') || !idExact(c.ID) {
		return Call{}, false
	}
	return c, true
}

// peeker is peekCall's cursor over a message.
type peeker struct {
	b []byte
	i int
}

func (p *peeker) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// object reads an object, calling member for each key with the cursor at
// its value, which member must consume.
func (p *peeker) object(member func(key string) bool) bool {
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false
	}
	p.i++
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return true
	}
	for {
		var key string
		p.space()
		if !p.plainString(&key) {
			return false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		if !member(key) {
			return false
		}
		p.space()
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// params reads tools/call params: name and _meta's protocol version.
func (p *peeker) params(c *Call) bool {
	seen := map[string]bool{}
	return p.object(func(key string) bool {
		if seen[key] {
			return false
		}
		seen[key] = true
		switch key {
		case "name":
			return p.plainString(&c.Tool)
		case "_meta":
			return p.object(func(key string) bool {
				if key == "io.modelcontextprotocol/protocolVersion" {
					return c.Version == "" && p.plainString(&c.Version)
				}
				return p.value()
			})
		}
		return p.value()
	})
}

// plainString reads a string without escapes into s.
func (p *peeker) plainString(s *string) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			*s = string(p.b[p.i+1 : j])
			p.i = j + 1
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

// value skips one value of a message json.Valid accepted: a string, an
// object or array (nesting counted, strings inside skipped whole), or a
// literal or number.
func (p *peeker) value() bool {
	if p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		return p.skipString()
	case c == '{' || c == '[':
		return p.skipNested()
	case literalByte(c):
		for p.i < len(p.b) && literalByte(p.b[p.i]) {
			p.i++
		}
		return true
	}
	return false
}

func (p *peeker) skipNested() bool {
	depth := 0
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '"':
			if !p.skipString() {
				return false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				p.i++
				return true
			}
		}
		p.i++
	}
	return false
}

func literalByte(c byte) bool {
	return c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// skipString skips a string, escapes included.
func (p *peeker) skipString() bool {
	for j := p.i + 1; j < len(p.b); j++ {
		switch p.b[j] {
		case '"':
			p.i = j + 1
			return true
		case '\\':
			j++
		}
	}
	return false
}
