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

// nextMatch returns the offset in hay just past marker's first occurrence
// that ends in the new chunk (its last byte at or after fresh: a marker that
// lay entirely in the previous chunk, possibly seen before the fault was
// armed, must not trigger on an unrelated later chunk), or, when after is not
// negative, that begins at or after offset after (the end of the marker
// before it in the same window); -1 when there is none.
func nextMatch(hay []byte, fresh, after int, marker []byte) int {
	from := after
	if from < 0 {
		if len(hay) == fresh {
			return -1
		}
		from = max(0, fresh-len(marker)+1)
	}
	i := bytes.Index(hay[from:], marker)
	if i < 0 {
		return -1
	}
	return from + i + len(marker)
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
