package mcpedge

import (
	"bytes"
)

// maxDepth is how deeply encoding/json lets values nest (its scanner's
// maxNestingDepth): json.Valid refuses one level more, and so must pass.
const maxDepth = 10000

// smallObject is how many keys an object's duplicate check compares
// pairwise before it switches to a map: few objects have more, and a
// pairwise check of a huge one would be quadratic.
const smallObject = 16

// versionKey is the _meta member naming a request's protocol version.
const versionKey = "io.modelcontextprotocol/protocolVersion"

// level says which object pass is reading the members of: the envelope,
// its params, params' _meta, or any other.
type level uint8

const (
	levelOther level = iota
	levelEnvelope
	levelParams
	levelMeta
)

// span is a key's bytes between its quotes; verbatim when they are its
// value (no escape, valid UTF-8), so keys compare without decoding.
type span struct {
	start, end int
	verbatim   bool
}

// pass is CheckMessage's one reading of a message: it validates it as
// json.Valid does, finds the first duplicate key as encoding/json decodes
// keys, notes invalid UTF-8 and unpaired surrogate escapes, and keeps the
// bytes of the envelope members that make a Call, as encoding/json's
// decoder would read them (the last of a repeated member wins). It
// allocates only to decode a key with an escape or invalid UTF-8, for an
// object past smallObject keys, and for more than len(keys) keys open
// at once.
type pass struct {
	b     []byte
	i     int
	depth int
	top   byte // the first byte of the message's value

	dupDepth int  // depth of the object holding the first duplicate key (1 = the envelope), or 0
	badUTF8  bool // a string holds invalid UTF-8
	lone     bool // a string holds an unpaired UTF-16 surrogate escape

	// The keys of the open objects, innermost last: the first len(keys)
	// here, the rest in more.
	keys  [32]span
	nkeys int
	more  []span

	// The envelope's id, method and params: their values' bytes, nil
	// when absent.
	id, method, params []byte
	// Of the last params: name's and arguments' values, and the version
	// its _meta names as encoding/json reads it into a struct (keys
	// matched case-insensitively, the last non-null value wins, and a
	// value of another kind spoils the whole read: versionBad).
	name, args, version []byte
	versionBad          bool
}

// message reads p.b as exactly one JSON value and reports whether it is
// one (json.Valid's verdict).
func (p *pass) message() bool {
	p.space()
	if p.i < len(p.b) {
		p.top = p.b[p.i]
	}
	if !p.value(levelEnvelope) {
		return false
	}
	p.space()
	return p.i == len(p.b)
}

// value reads one value; l is the level of an object there.
func (p *pass) value(l level) bool {
	if p.i >= len(p.b) {
		return false
	}
	switch p.b[p.i] {
	case '{':
		return p.object(l)
	case '[':
		return p.array()
	case '"':
		_, ok := p.str()
		return ok
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	}
	return p.number()
}

// open enters the object or array at p.i.
func (p *pass) open() bool {
	p.i++
	p.depth++
	p.space()
	return p.depth <= maxDepth
}

// object reads an object whose members are of level l.
func (p *pass) object(l level) bool {
	if !p.open() {
		return false
	}
	start := p.nkeys
	var set map[string]struct{} // past smallObject keys
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		p.depth--
		return true
	}
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return false
		}
		k := span{start: p.i + 1}
		verbatim, ok := p.str()
		if !ok {
			return false
		}
		k.end, k.verbatim = p.i-1, verbatim
		if p.dupDepth == 0 {
			set = p.note(k, start, set)
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		if !p.member(l, k) {
			return false
		}
		p.space()
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			p.depth--
			p.truncate(start)
			return true
		default:
			return false
		}
	}
}

// member reads the value of key k of an object of level l, keeping what
// a Call needs.
func (p *pass) member(l level, k span) bool {
	start := p.i
	var kept *[]byte
	switch l {
	case levelEnvelope:
		switch string(p.decoded(k)) {
		case "id":
			kept = &p.id
		case "method":
			kept = &p.method
		case "params":
			p.name, p.args, p.version, p.versionBad = nil, nil, nil, false
			if !p.value(levelParams) {
				return false
			}
			p.params = p.b[start:p.i]
			return true
		}
	case levelParams:
		switch d := p.decoded(k); {
		case string(d) == "name":
			kept = &p.name
		case string(d) == "arguments":
			kept = &p.args
		case bytes.EqualFold(d, []byte("_meta")):
			return p.field('{', levelMeta)
		}
	case levelMeta:
		if bytes.EqualFold(p.decoded(k), []byte(versionKey)) {
			return p.field('"', levelOther)
		}
	}
	if !p.value(levelOther) {
		return false
	}
	if kept != nil {
		*kept = p.b[start:p.i]
	}
	return true
}

// field reads the value of a member encoding/json decodes into a struct
// field of the kind want opens ('{' a struct, '"' a string): null leaves
// the field as it was, another kind is an error that spoils the decode.
func (p *pass) field(want byte, l level) bool {
	start := p.i
	if !p.value(l) {
		return false
	}
	switch v := p.b[start:p.i]; v[0] {
	case want:
		if want == '"' {
			p.version = v
		}
	case 'n':
	default:
		p.versionBad = true
	}
	return true
}

// array reads an array.
func (p *pass) array() bool {
	if !p.open() {
		return false
	}
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		p.depth--
		return true
	}
	for {
		if !p.value(levelOther) {
			return false
		}
		p.space()
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			p.i++
			p.depth--
			return true
		default:
			return false
		}
	}
}

// note checks key k of the object whose keys start at start for a
// duplicate, noting the first one's depth, and keeps k for the keys after
// it. Keys compare as encoding/json decodes them, case-sensitively.
func (p *pass) note(k span, start int, set map[string]struct{}) map[string]struct{} {
	if set == nil && p.nkeys-start >= smallObject {
		set = make(map[string]struct{}, 2*smallObject)
		for j := start; j < p.nkeys; j++ {
			set[string(p.decoded(p.key(j)))] = struct{}{}
		}
	}
	dup := false
	if set != nil {
		d := p.decoded(k)
		_, dup = set[string(d)]
		set[string(d)] = struct{}{}
	} else {
		for j := start; j < p.nkeys && !dup; j++ {
			dup = p.same(p.key(j), k)
		}
		if !dup {
			p.push(k)
		}
	}
	if dup {
		p.dupDepth = p.depth
	}
	return set
}

func (p *pass) key(j int) span {
	if j < len(p.keys) {
		return p.keys[j]
	}
	return p.more[j-len(p.keys)]
}

func (p *pass) push(k span) {
	if p.nkeys < len(p.keys) {
		p.keys[p.nkeys] = k
	} else {
		p.more = append(p.more, k)
	}
	p.nkeys++
}

// truncate forgets the keys from start on, an object's as it closes.
func (p *pass) truncate(start int) {
	p.nkeys = start
	if start >= len(p.keys) {
		p.more = p.more[:start-len(p.keys)]
	} else {
		p.more = p.more[:0]
	}
}

// same reports whether keys a and b decode to the same string.
func (p *pass) same(a, b span) bool {
	if a.verbatim && b.verbatim {
		return bytes.Equal(p.b[a.start:a.end], p.b[b.start:b.end])
	}
	return bytes.Equal(p.decoded(a), p.decoded(b))
}

// decoded is key k's value as encoding/json decodes it.
func (p *pass) decoded(k span) []byte {
	if k.verbatim {
		return p.b[k.start:k.end]
	}
	return []byte(unquote(p.b[k.start-1 : k.end+1]))
}
