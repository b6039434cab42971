package mcpedge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// walk checks that msg is exactly one JSON value and reports the depth of
// the first object holding a duplicate key (1 = the top-level object), or 0.
// Keys compare case-sensitively, as the SDK's decoder matches them. A valid
// message costs one validating pass and one scan that allocates nothing
// for a typical call; until issue 21 a token-by-token decode did both, at
// about 170 allocations per call (docs/perf.md).
func walk(msg []byte) (dupDepth int, err error) {
	if !json.Valid(msg) {
		return 0, malformed(msg)
	}
	return duplicates(msg), nil
}

// malformed says what is wrong with msg, which json.Valid refused, in the
// words of encoding/json's decoder.
func malformed(msg []byte) error {
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber() // numbers are only skipped; don't parse them
	for depth := 0; ; {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("malformed JSON: %w", err)
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			break
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("malformed JSON: data after the message")
	}
	return errors.New("malformed JSON")
}

// smallObject is how many keys an object's duplicate check compares
// pairwise before it switches to a map: few objects have more, and a
// pairwise check of a huge one would be quadratic.
const smallObject = 16

// keyFrame is one open object or array of duplicates' scan.
type keyFrame struct {
	isObj bool
	start int                 // this object's first key in keys
	set   map[string]struct{} // past smallObject keys
}

// duplicates returns the depth of the first object holding a duplicate key
// in msg (1 = the top-level object), or 0. msg must be valid JSON
// (json.Valid): the scan only tracks strings and brackets. Keys compare as
// encoding/json decodes them, escapes and invalid UTF-8 included, but a
// key is decoded only when it has a backslash or a non-ASCII byte, so a
// typical message costs no allocation beyond a deep nesting's stack.
func duplicates(msg []byte) int {
	var (
		stackBuf [16]keyFrame
		keysBuf  [64][]byte
		stack    = stackBuf[:0]
		keys     = keysBuf[:0]
	)
	wantKey := false
	for i := 0; i < len(msg); i++ {
		switch c := msg[i]; c {
		case '{', '[':
			stack = append(stack, keyFrame{isObj: c == '{', start: len(keys)})
			wantKey = c == '{'
		case '}', ']':
			top := stack[len(stack)-1]
			keys = keys[:top.start]
			stack = stack[:len(stack)-1]
			wantKey = false
		case ',':
			wantKey = stack[len(stack)-1].isObj
		case '"':
			end := stringEnd(msg, i)
			if wantKey {
				top := &stack[len(stack)-1]
				k := key(msg[i : end+1])
				if top.set == nil && len(keys)-top.start >= smallObject {
					top.set = make(map[string]struct{}, 2*smallObject)
					for _, old := range keys[top.start:] {
						top.set[string(old)] = struct{}{}
					}
				}
				dup := false
				if top.set != nil {
					_, dup = top.set[string(k)]
					top.set[string(k)] = struct{}{}
				} else {
					for _, old := range keys[top.start:] {
						if bytes.Equal(old, k) {
							dup = true
							break
						}
					}
				}
				if dup {
					return len(stack)
				}
				keys = append(keys, k)
				wantKey = false
			}
			i = end
		}
	}
	return 0
}

// stringEnd returns the index of the quote closing the string that opens
// at msg[start].
func stringEnd(msg []byte, start int) int {
	for i := start + 1; i < len(msg); i++ {
		switch msg[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(msg) - 1
}

// key returns a JSON string's value as encoding/json decodes it: msg's own
// bytes when nothing needs decoding.
func key(quoted []byte) []byte {
	raw := quoted[1 : len(quoted)-1]
	plain := bytes.IndexByte(raw, '\\') < 0
	for _, b := range raw {
		if b >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return raw
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // valid JSON: cannot fail
	return []byte(s)
}

// hasLoneSurrogate reports whether a JSON string in msg escapes half of a
// UTF-16 surrogate pair without the other half. msg must be valid JSON, so
// a backslash inside a string always starts an escape.
func hasLoneSurrogate(msg []byte) bool {
	inString := false
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if msg[i+1] != 'u' {
				i++
				continue
			}
			r := hex4(msg[i+2 : i+6])
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(msg) || msg[i+1] != '\\' || msg[i+2] != 'u' {
					return true
				}
				if lo := hex4(msg[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
					return true
				}
				i += 6
			}
		}
	}
	return false
}

// hex4 decodes four hex digits (already validated by the JSON walk).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}
