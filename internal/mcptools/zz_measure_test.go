package mcptools_test

import (
	"encoding/json"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
)

func TestZZMeasure(t *testing.T) {
	b := rawToolsList(t, authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin)
	var msg struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	_ = json.Unmarshal(b, &msg)
	t.Logf("total %d", len(b))
	for _, tool := range msg.Result.Tools {
		var parts map[string]json.RawMessage
		_ = json.Unmarshal(tool, &parts)
		t.Logf("%s: %d bytes (description %d, input %d, output %d, ann %d)", parts["name"], len(tool),
			len(parts["description"]), len(parts["inputSchema"]), len(parts["outputSchema"]), len(parts["annotations"]))
	}
}
