package faultproxy

import "bytes"

// stream carries the end of the previous chunk of one direction of a
// connection, so that a marker split across two reads is still found.
type stream struct {
	tail []byte // ASCII lower-cased
	buf  []byte // reused scratch space for window
}

// window returns the lower-cased concatenation of the retained tail and
// chunk, and the offset at which chunk begins. The result aliases internal
// scratch space and is valid until the next call to window.
func (s *stream) window(chunk []byte) (hay []byte, fresh int) {
	hay = append(s.buf[:0], s.tail...)
	hay = appendLower(hay, chunk)
	s.buf = hay
	return hay, len(s.tail)
}

// keep retains the last n bytes of hay for the next window. Retaining one
// byte less than the longest marker is enough: a longer tail could only hold
// a complete marker, which was already seen in an earlier window.
func (s *stream) keep(hay []byte, n int) {
	n = max(0, min(n, len(hay)))
	s.tail = append(s.tail[:0], hay[len(hay)-n:]...)
}

// matchEndsIn reports whether marker occurs in hay with its last byte at or
// after offset fresh. Requiring the match to end in the new chunk stops a
// marker that lay entirely in the previous chunk (possibly seen before the
// fault was armed) from triggering on an unrelated later chunk.
func matchEndsIn(hay []byte, fresh int, marker []byte) bool {
	if len(hay) == fresh {
		return false
	}
	from := max(0, fresh-len(marker)+1)
	return bytes.Contains(hay[from:], marker)
}

// appendLower appends src to dst with ASCII letters lower-cased. Only ASCII
// is folded because markers are protocol keywords and byte-level Unicode
// folding could change lengths and straddle boundaries unpredictably.
func appendLower(dst, src []byte) []byte {
	for _, b := range src {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		dst = append(dst, b)
	}
	return dst
}
