package mcpedge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

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

// known are the strings a Call most often holds: unquote returns these
// without allocating.
var known = [...]string{
	"tools/call", "tools/list", "initialize", "ping", "notifications/initialized", "server/discover", Protocol2026,
}

// unquote returns the value of the JSON string quoted (quotes included) as
// encoding/json decodes it: escapes resolved, and each invalid UTF-8 byte
// and unpaired surrogate escape turned into U+FFFD.
func unquote(quoted []byte) string {
	raw := quoted[1 : len(quoted)-1]
	for _, k := range known {
		if string(raw) == k {
			return k
		}
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // a string the pass validated: cannot fail
	return s
}

// plainByte marks the bytes a string holds as themselves: all of ASCII
// but the quote, the backslash and the control characters.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads the string at p.i and reports whether its bytes are its value
// (verbatim: no escape, valid UTF-8).
func (p *pass) str() (verbatim, ok bool) {
	b := p.b
	verbatim = true
	for i := p.i + 1; i < len(b); {
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			p.i = i + 1
			return verbatim, true
		case c == '\\':
			n := p.escape(i)
			if n == 0 {
				return false, false
			}
			verbatim = false
			i += n
		case c < 0x20:
			return false, false
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				p.badUTF8, verbatim = true, false
			}
			i += size
		}
	}
	return false, false
}

// escape returns the length of the escape at b[i], a backslash: a
// surrogate pair's two escapes count as one; 0 when it is no escape.
func (p *pass) escape(i int) int {
	b := p.b
	if i+1 >= len(b) {
		return 0
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
	default:
		return 0
	}
	r, ok := hex4(b, i+2)
	switch {
	case !ok:
		return 0
	case r >= 0xDC00 && r <= 0xDFFF:
		p.lone = true
	case r >= 0xD800 && r <= 0xDBFF:
		if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			if lo, ok := hex4(b, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 12
			}
		}
		p.lone = true
	}
	return 6
}

// hex4 decodes the four hex digits at b[at].
func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *pass) number() bool {
	b, i := p.b, p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		i = digits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		i = digits(b, i)
	}
	p.i = i
	return true
}

// digits returns the index past the digits starting at b[i].
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func (p *pass) literal(word string) bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		return false
	}
	p.i += len(word)
	return true
}

func (p *pass) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}
