package mcptools

import (
	"cmp"
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
)

// DefaultMaxConcurrentPages bounds how many list pages the server builds at
// once. A page is capped at about 1 MiB of JSON (tickets.MaxPageBytes), but
// the SDK holds several copies of it while it encodes and validates the
// result (about 13 MiB per full page, measured), so 40 hostile list calls at
// once reached 538 MiB, and 329 MiB with 8 at a time (scripts/edge-measure.sh).
// Building a full page is CPU-bound, so more at once than about two per core
// adds memory, not throughput; small pages take milliseconds and barely wait.
const DefaultMaxConcurrentPages = 4

// PageBytes bounds the structured content of one list_tickets answer
// (docs/contract.md#lists-and-the-context-budget): a page stops before its items would pass it, and
// next_cursor continues, so one call never floods a model's context.
const PageBytes = 64 << 10

// pageItemsBudget is what a page's items may take of PageBytes: the rest is
// the envelope ({"tickets":[…],"next_cursor":…}, a cursor of at most
// maxCursor bytes).
const pageItemsBudget = PageBytes - maxCursor - 64

// encodedPage measures a page's items as the JSON they are sent as and
// keeps that JSON, so a page is encoded once rather than once to measure
// and again to send (docs/perf.md). It relies on the service calling
// measure once per item in page order and answering a prefix of the items
// it measured (tickets.ListTicketsParams.Measure).
type encodedPage[T any] struct {
	encode  func(T) ([]byte, error) // an item's JSON as json.Marshal writes it
	encoded []json.RawMessage
}

// measure is an item's size in the page: its JSON and the comma after it.
func (p *encodedPage[T]) measure(item T) (int, error) {
	b, err := p.encode(item)
	if err != nil {
		return 0, fmt.Errorf("measure list item: %w", err)
	}
	p.encoded = append(p.encoded, b)
	return len(b) + 1, nil
}

// items returns the JSON of the page's first n items, each as a pointer
// into the page's own: a json.RawMessage in an interface is a copy of its
// slice on the heap, one allocation per item.
func (p *encodedPage[T]) items(n int) ([]any, error) {
	if n > len(p.encoded) {
		return nil, fmt.Errorf("list page: %d items but %d measured", n, len(p.encoded))
	}
	out := make([]any, n)
	for i := range out {
		out[i] = &p.encoded[i]
	}
	return out, nil
}

// pageJSON writes out as json.Marshal writes it, from the JSON the page
// budget measured for each item (encodedPage), which json.Marshal would
// scan and copy once more to compact: about 4 % of a list call's CPU. It
// reports false for a page whose items are not that JSON.
func (out ListTicketsOut) pageJSON() ([]byte, bool) {
	if out.Tickets == nil {
		return nil, false // json.Marshal writes null
	}
	size := len(`{"tickets":[],"next_cursor":""}`) + len(out.NextCursor)
	for _, item := range out.Tickets {
		raw, ok := item.(*json.RawMessage)
		if !ok {
			return nil, false
		}
		size += len(*raw) + 1
	}
	b := append(make([]byte, 0, size), `{"tickets":[`...)
	for i, item := range out.Tickets {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, *item.(*json.RawMessage)...)
	}
	b = append(b, ']')
	if out.NextCursor != "" {
		cursor, err := json.Marshal(out.NextCursor)
		if err != nil {
			return nil, false
		}
		b = append(append(b, `,"next_cursor":`...), cursor...)
	}
	return append(b, '}'), true
}

// pageTools are the tools whose answer is a page of up to a MiB.
var pageTools = map[string]bool{ToolListTickets: true, ToolListComments: true}

// PageShare is one tenant's share of total page slots (shared by MCP and
// REST lists, server.Edge): half of total or of the cores, whichever is
// fewer, at least 1. Building a full page is CPU-bound, so one tenant
// building more at once takes the CPU other tenants' calls need (on 2
// cores a share of 2 left another tenant's small lists 14 times slower,
// scripts/edge-measure.sh).
func PageShare(total int) int { return max(1, min(total, runtime.GOMAXPROCS(0))/2) }

// AdmissionSettings size the admission every write and list page goes
// through; a zero field takes its default.
type AdmissionSettings struct {
	WorkSlots         int           // default limits.WorkSlotsFor(PoolSize)
	PoolSize          int           // the database pool, 0 when unknown
	TenantQueue       int           // default limits.DefaultTenantQueue
	MaxPages          int           // list pages built at once, default DefaultMaxConcurrentPages
	MaxPagesPerTenant int           // default PageShare(MaxPages), at most MaxPages
	Wait              time.Duration // default limits.DefaultAdmissionWait
}

// NewAdmission builds the admission of s, its defaults applied: the one
// construction the HTTP server and a stdio session share.
func NewAdmission(s AdmissionSettings) (*limits.Admission, error) {
	work, err := limits.NewWork(cmp.Or(s.WorkSlots, limits.WorkSlotsFor(s.PoolSize)), cmp.Or(s.TenantQueue, limits.DefaultTenantQueue))
	if err != nil {
		return nil, fmt.Errorf("work slots: %w", err)
	}
	pageTotal := cmp.Or(s.MaxPages, DefaultMaxConcurrentPages)
	pages, err := limits.NewSlots(pageTotal, min(pageTotal, cmp.Or(s.MaxPagesPerTenant, PageShare(pageTotal))))
	if err != nil {
		return nil, fmt.Errorf("page slots: %w", err)
	}
	return limits.NewAdmission(work, pages, cmp.Or(s.Wait, limits.DefaultAdmissionWait))
}
