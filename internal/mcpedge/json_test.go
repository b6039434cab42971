package mcpedge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// tokenWalk is the duplicate-key check walk made before issue 21, key by
// key through encoding/json's decoder: the oracle duplicates must agree
// with on every valid message.
func tokenWalk(msg []byte) int {
	type frame struct {
		keys    map[string]struct{}
		isObj   bool
		wantKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	var stack []frame
	dupDepth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return -1
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				if top != nil && top.isObj {
					top.wantKey = true
				}
				stack = append(stack, frame{isObj: tok == '{', wantKey: tok == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.isObj && top.wantKey {
				if top.keys == nil {
					top.keys = make(map[string]struct{})
				}
				if _, dup := top.keys[tok]; dup && dupDepth == 0 {
					dupDepth = len(stack)
				}
				top.keys[tok] = struct{}{}
				top.wantKey = false
				continue
			}
			if top != nil && top.isObj {
				top.wantKey = true
			}
		default:
			if top != nil && top.isObj {
				top.wantKey = true
			}
		}
		if len(stack) == 0 {
			break
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return -1
	}
	return dupDepth
}

var duplicateSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"\ud83d\ude00"}}}`,
	`{"a":1,"a":2}`, `[1]`, `[{"a":1},{"a":1}]`, `{"a":[{"x":1,"x":2}]}`, `{"a":{"b":1},"b":2,"a":3}`,
	`{"\u0061":1,"a":2}`, "{\"\xff\":1,\"\xfe\":2}", `{"a":"}","b":"\"","a":1}`, `{"a\\":1,"a\\":2}`, `"x"`, `{}`,
	`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,` +
		`"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k3":0}`,
}

// TestDuplicatesAgreesWithTheTokenWalk: the scan finds the duplicate keys,
// at the depth, that the decoder-based walk found, escapes and invalid
// UTF-8 in keys and objects past the pairwise size included.
func TestDuplicatesAgreesWithTheTokenWalk(t *testing.T) {
	t.Parallel()
	for _, msg := range duplicateSeeds {
		if got, want := duplicates([]byte(msg)), tokenWalk([]byte(msg)); got != want {
			t.Errorf("duplicates(%q) = %d, the token walk %d", msg, got, want)
		}
	}
}

// FuzzDuplicates compares the scan with the token walk on every message
// json.Valid accepts, and walk's verdict on validity with the decoder's.
func FuzzDuplicates(f *testing.F) {
	for _, seed := range duplicateSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		want := tokenWalk(msg)
		got, err := walk(msg)
		switch {
		case (err != nil) != (want < 0):
			t.Fatalf("walk(%q) error %v, the token walk %d", msg, err, want)
		case err == nil && got != want:
			t.Fatalf("walk(%q) = %d, the token walk %d", msg, got, want)
		}
	})
}

// BenchmarkWalk is the guard's JSON pass over a create_ticket call as the
// go-sdk client sends it.
func BenchmarkWalk(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{` +
		`"operation_id":"0190f3c4-6b1e-7cc2-9a51-3f6e2d8b4c10","project_id":"support","title":"Printer on fire","labels":["hardware"]},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := walk(msg); err != nil {
			b.Fatal(err)
		}
	}
}
