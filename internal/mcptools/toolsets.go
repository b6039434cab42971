package mcptools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/internal/authn"
)

// Toolset names (TICKETD_TOOLSETS, docs/operators.md). A server offers the
// tools of the sets it is given; every client pays for the tools it is
// offered on every turn (docs/contract.md#lists-and-the-context-budget),
// so the sets an agent rarely needs are not offered by default.
const (
	ToolsetTickets  = "tickets"
	ToolsetComments = "comments"
	ToolsetLinks    = "links"
	ToolsetBulk     = "bulk"
	ToolsetPeople   = "people"
	// ToolsetAll names every set.
	ToolsetAll = "all"
)

// DefaultToolsets is what a server offers when no sets are named.
const DefaultToolsets = ToolsetTickets + "," + ToolsetComments + "," + ToolsetLinks

// toolsetTools assigns every tool of Tools to exactly one set
// (TestEveryToolIsInOneToolset): adding a tool to a set is its name here.
var toolsetTools = map[string][]string{
	ToolsetTickets: {
		ToolCreateTicket, ToolPreviewTicket, ToolUpdateTicket, ToolGetOperationStatus, ToolGetTicket,
		ToolListTickets, ToolListProjects,
	},
	ToolsetComments: {ToolAddComment, ToolListComments},
	ToolsetLinks:    {ToolLinkTickets},
	ToolsetBulk:     {ToolBulkUpdateTickets},
	ToolsetPeople:   {ToolListUsers},
}

// toolsetOrder is the sets in the order help and errors name them.
var toolsetOrder = []string{ToolsetTickets, ToolsetComments, ToolsetLinks, ToolsetBulk, ToolsetPeople}

// Toolsets is a choice of toolsets; the zero value is DefaultToolsets.
type Toolsets struct {
	sets []string // sorted as toolsetOrder; nil: the default
}

// ParseToolsets reads a comma-separated list of set names (spaces
// ignored, any case); "all" names every set, and an empty list is the
// default. An unknown name is an error naming the known ones.
func ParseToolsets(s string) (Toolsets, error) {
	if strings.TrimSpace(s) == "" {
		s = DefaultToolsets
	}
	chosen := map[string]bool{}
	for name := range strings.SplitSeq(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		switch {
		case name == ToolsetAll:
			for _, n := range toolsetOrder {
				chosen[n] = true
			}
		case slices.Contains(toolsetOrder, name):
			chosen[name] = true
		case name == "":
		default:
			return Toolsets{}, fmt.Errorf("unknown toolset %q: want a comma-separated list of %s or %s",
				name, strings.Join(toolsetOrder, ", "), ToolsetAll)
		}
	}
	var t Toolsets
	for _, n := range toolsetOrder {
		if chosen[n] {
			t.sets = append(t.sets, n)
		}
	}
	return t, nil
}

// Names returns the chosen sets, in toolsetOrder.
func (t Toolsets) Names() []string {
	if t.sets == nil {
		d, _ := ParseToolsets(DefaultToolsets)
		return d.sets
	}
	return slices.Clone(t.sets)
}

// String is the sets as ParseToolsets reads them.
func (t Toolsets) String() string { return strings.Join(t.Names(), ",") }

// has reports whether tool is in one of the chosen sets.
func (t Toolsets) has(tool string) bool {
	for _, set := range t.Names() {
		if slices.Contains(toolsetTools[set], tool) {
			return true
		}
	}
	return false
}

// served lists the tools a server built with opts offers, in Tools' order:
// those of its toolsets, and of those only the read tools when it is
// read-only.
func served(opts Options) []Tool {
	var out []Tool
	for _, t := range Tools() {
		if opts.Toolsets.has(t.Name) && (!opts.ReadOnly || t.Scope == authn.ScopeRead) {
			out = append(out, t)
		}
	}
	return out
}
