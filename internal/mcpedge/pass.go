package mcpedge

import "bytes"

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

// member says which member of interest an object's current member is.
type member uint8

const (
	memberOther member = iota
	memberID
	memberMethod
	memberParams
	memberName
	memberArguments
	memberMeta    // params' _meta, which encoding/json reads into a struct
	memberVersion // _meta's protocol version, read into a string
)

// span is a key's bytes between its quotes; verbatim when they are its
// value (no escape, valid UTF-8), so keys compare without decoding.
type span struct {
	start, end int
	verbatim   bool
}

// frame is an open object or array.
type frame struct {
	set        map[string]struct{} // an object's keys, past smallObject
	start      int                 // an object's first key in keys
	valueStart int                 // where its current member's value starts
	obj        bool
	level      level  // of an object: which one it is
	member     member // of an object: its current member
}

// pass is CheckMessage's one reading of a message: it validates it as
// json.Valid does, finds the first duplicate key as encoding/json decodes
// keys, notes invalid UTF-8 and unpaired surrogate escapes, and keeps the
// bytes of the envelope members that make a Call, as encoding/json's
// decoder would read them (the last of a repeated member wins). It keeps
// its own stack rather than recursing, so a deeply nested message costs
// it no more than it cost encoding/json, and it allocates only to decode
// a key with an escape or invalid UTF-8, for an object past smallObject
// keys, and past len(stack.inline) open objects or keys.
type pass struct {
	b   []byte
	i   int
	top byte // the first byte of the message's value

	dupDepth int  // depth of the object holding the first duplicate key (1 = the envelope), or 0
	badUTF8  bool // a string holds invalid UTF-8
	lone     bool // a string holds an unpaired UTF-16 surrogate escape

	frames stack[frame] // the open objects and arrays, innermost last
	keys   stack[span]  // the keys of the open objects so far

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
	l := levelEnvelope // of an object where a value is wanted
	for {
		opened, ok := p.begin(l)
		if !ok {
			return false
		}
		if opened {
			if f := p.frames.at(p.frames.n - 1); f.obj {
				l, ok = p.key(f)
			} else {
				l = levelOther
			}
			if !ok {
				return false
			}
			continue
		}
		more := false
		if l, more, ok = p.next(); !ok {
			return false
		}
		if !more {
			p.space()
			return p.i == len(p.b)
		}
	}
}

// begin reads the value at p.i, of level l if an object: all of a scalar
// or an empty object or array; else it opens the object or array.
func (p *pass) begin(l level) (opened, ok bool) {
	if p.i >= len(p.b) {
		return false, false
	}
	switch c := p.b[p.i]; c {
	case '{', '[':
		if p.frames.n >= maxDepth {
			return false, false
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		p.i++
		p.space()
		if p.i < len(p.b) && p.b[p.i] == closing {
			p.i++
			return false, true
		}
		p.frames.push(frame{obj: c == '{', level: l, start: p.keys.n})
		return true, true
	case '"':
		_, ok := p.str()
		return false, ok
	case 't':
		return false, p.literal("true")
	case 'f':
		return false, p.literal("false")
	case 'n':
		return false, p.literal("null")
	}
	return false, p.number()
}

// next goes on after a complete value: it closes the objects and arrays
// the value completes and reads up to the next value wanted, of level l if
// an object; more is false when the message's value is complete.
func (p *pass) next() (l level, more, ok bool) {
	for p.frames.n > 0 {
		f := p.frames.at(p.frames.n - 1)
		if f.obj {
			p.keep(f)
		}
		p.space()
		if p.i >= len(p.b) {
			return 0, false, false
		}
		switch c := p.b[p.i]; {
		case c == ',':
			p.i++
			p.space()
			if !f.obj {
				return levelOther, true, true
			}
			l, ok = p.key(f)
			return l, true, ok
		case c == '}' && f.obj, c == ']' && !f.obj:
			p.i++
			if f.obj {
				p.keys.truncate(f.start)
			}
			p.frames.truncate(p.frames.n - 1)
		default:
			return 0, false, false
		}
	}
	return 0, false, true
}

// key reads the key of the object f's next member and the colon after it,
// and returns the level of an object as its value.
func (p *pass) key(f *frame) (level, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return 0, false
	}
	k := span{start: p.i + 1}
	verbatim, ok := p.str()
	if !ok {
		return 0, false
	}
	k.end, k.verbatim = p.i-1, verbatim
	if p.dupDepth == 0 {
		f.set = p.note(k, f.start, f.set)
	}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return 0, false
	}
	p.i++
	p.space()
	f.valueStart, f.member = p.i, p.which(f.level, k)
	switch f.member {
	case memberParams:
		p.name, p.args, p.version, p.versionBad = nil, nil, nil, false
		return levelParams, true
	case memberMeta:
		return levelMeta, true
	}
	return levelOther, true
}

// which says which member of interest key k names in an object of level l.
// The envelope and params are read into maps (keys match exactly), _meta
// into a struct (keys match as bytes.EqualFold does).
func (p *pass) which(l level, k span) member {
	switch l {
	case levelEnvelope:
		switch string(p.decoded(k)) {
		case "id":
			return memberID
		case "method":
			return memberMethod
		case "params":
			return memberParams
		}
	case levelParams:
		switch d := p.decoded(k); {
		case string(d) == "name":
			return memberName
		case string(d) == "arguments":
			return memberArguments
		case bytes.EqualFold(d, []byte("_meta")):
			return memberMeta
		}
	case levelMeta:
		if bytes.EqualFold(p.decoded(k), []byte(versionKey)) {
			return memberVersion
		}
	}
	return memberOther
}

// keep notes the value of f's current member, which ends at p.i, if it is
// one of interest. _meta and its version are read as encoding/json reads
// them into a struct's fields: null leaves a field as it was, and a value
// of the wrong kind is an error that spoils the whole read.
func (p *pass) keep(f *frame) {
	v := p.b[f.valueStart:p.i]
	switch f.member {
	case memberID:
		p.id = v
	case memberMethod:
		p.method = v
	case memberParams:
		p.params = v
	case memberName:
		p.name = v
	case memberArguments:
		p.args = v
	case memberMeta:
		p.versionBad = p.versionBad || v[0] != '{' && v[0] != 'n'
	case memberVersion:
		if v[0] == '"' {
			p.version = v
		}
		p.versionBad = p.versionBad || v[0] != '"' && v[0] != 'n'
	}
}

// note checks key k of the object whose keys start at start for a
// duplicate, noting the first one's depth, and keeps k for the keys after
// it. Keys compare as encoding/json decodes them, case-sensitively.
func (p *pass) note(k span, start int, set map[string]struct{}) map[string]struct{} {
	if set == nil && p.keys.n-start >= smallObject {
		set = make(map[string]struct{}, 2*smallObject)
		for j := start; j < p.keys.n; j++ {
			set[string(p.decoded(*p.keys.at(j)))] = struct{}{}
		}
	}
	dup := false
	if set != nil {
		d := p.decoded(k)
		_, dup = set[string(d)]
		set[string(d)] = struct{}{}
	} else {
		for j := start; j < p.keys.n && !dup; j++ {
			dup = p.same(*p.keys.at(j), k)
		}
		if !dup {
			p.keys.push(k)
		}
	}
	if dup {
		p.dupDepth = p.frames.n
	}
	return set
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

// stack is a last-in-first-out list whose first len(inline) elements cost
// no allocation.
type stack[T any] struct {
	inline [32]T
	more   []T
	n      int
}

func (s *stack[T]) push(v T) {
	if s.n < len(s.inline) {
		s.inline[s.n] = v
	} else {
		s.more = append(s.more, v)
	}
	s.n++
}

func (s *stack[T]) at(j int) *T {
	if j < len(s.inline) {
		return &s.inline[j]
	}
	return &s.more[j-len(s.inline)]
}

// truncate keeps the first n elements.
func (s *stack[T]) truncate(n int) {
	s.n = n
	s.more = s.more[:max(n-len(s.inline), 0)]
}
