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
// Keys compare case-sensitively, as the SDK's decoder matches them.
func walk(msg []byte) (dupDepth int, err error) {
	type frame struct {
		keys    map[string]struct{}
		isObj   bool
		wantKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber() // numbers are only skipped; don't parse them
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return 0, fmt.Errorf("malformed JSON: %w", err)
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
		return 0, errors.New("malformed JSON: data after the message")
	}
	return dupDepth, nil
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
