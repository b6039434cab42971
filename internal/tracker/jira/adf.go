package jira

import (
	"encoding/json"
	"strings"
)

// ADF is the Atlassian Document Format Jira Cloud holds descriptions and
// comment bodies in. ticketd writes plain text as one paragraph per
// blank-line-separated block, a line break within a block as a hardBreak,
// and reads any document back as text, so the markers it wrote are found
// again whatever else a person added.

// node is one ADF node: the document, a block, or an inline.
type node struct {
	Type    string         `json:"type"`
	Version int            `json:"version,omitempty"`
	Text    string         `json:"text,omitempty"`
	Attrs   map[string]any `json:"attrs,omitempty"`
	Content []node         `json:"content,omitempty"`
}

// docJSON is a whole document: its content is always present, as Jira
// requires, even when empty.
type docJSON struct {
	Type    string `json:"type"`
	Version int    `json:"version"`
	Content []node `json:"content"`
}

// Document is text as an ADF document; DocumentText(Document(s)) == s for
// any valid UTF-8 s.
func Document(text string) any {
	blocks := strings.Split(text, "\n\n")
	d := docJSON{Type: "doc", Version: 1, Content: make([]node, 0, len(blocks))}
	for _, b := range blocks {
		p := node{Type: "paragraph"}
		for k, line := range strings.Split(b, "\n") {
			if k > 0 {
				p.Content = append(p.Content, node{Type: "hardBreak"})
			}
			if line != "" {
				p.Content = append(p.Content, node{Type: "text", Text: line})
			}
		}
		d.Content = append(d.Content, p)
	}
	return d
}

// DocumentText is the text of an ADF document as a tracker sent it: the
// document's blocks separated by a blank line, nested blocks by a line
// break, inlines run together (a mention or an emoji as the text it
// shows). What is not a document reads as no text, never as an error: a
// person may have written anything there.
func DocumentText(raw json.RawMessage) string {
	var d node
	if err := json.Unmarshal(raw, &d); err != nil || d.Type != "doc" {
		return ""
	}
	parts := make([]string, 0, len(d.Content))
	for _, n := range d.Content {
		parts = append(parts, nodeText(n))
	}
	return strings.Join(parts, "\n\n")
}

// inline reports whether n sits within a line rather than being a block.
func inline(n node) bool {
	switch n.Type {
	case "text", "hardBreak", "mention", "emoji", "inlineCard", "date", "status":
		return true
	}
	return false
}

func nodeText(n node) string {
	switch n.Type {
	case "text":
		return n.Text
	case "hardBreak":
		return "\n"
	case "mention", "emoji", "status", "date", "inlineCard":
		for _, k := range []string{"text", "url"} {
			if s, ok := n.Attrs[k].(string); ok {
				return s
			}
		}
		return ""
	}
	var b strings.Builder
	for k, c := range n.Content {
		if k > 0 && !(inline(c) && inline(n.Content[k-1])) {
			b.WriteByte('\n')
		}
		b.WriteString(nodeText(c))
	}
	return b.String()
}
