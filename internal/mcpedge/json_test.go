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

// passDuplicates is the pass's verdict on msg in tokenWalk's terms: the
// depth of the first duplicate key, or -1 when msg is not one JSON value.
func passDuplicates(msg []byte) int {
	p := pass{b: msg}
	if !p.message() {
		return -1
	}
	return p.dupDepth
}

// TestDuplicatesAgreesWithTheTokenWalk: the pass finds the duplicate keys,
// at the depth, that the decoder-based walk found, escapes and invalid
// UTF-8 in keys and objects past the pairwise size included.
func TestDuplicatesAgreesWithTheTokenWalk(t *testing.T) {
	t.Parallel()
	for _, msg := range duplicateSeeds {
		if got, want := passDuplicates([]byte(msg)), tokenWalk([]byte(msg)); got != want {
			t.Errorf("pass on %q: %d, the token walk %d", msg, got, want)
		}
	}
}

// FuzzDuplicates compares the pass with the token walk on every message:
// its verdict on validity with the decoder's, and where valid the depth
// of the first duplicate key.
func FuzzDuplicates(f *testing.F) {
	for _, seed := range duplicateSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if got, want := passDuplicates(msg), tokenWalk(msg); got != want {
			t.Fatalf("pass on %q: %d, the token walk %d", msg, got, want)
		}
	})
}
