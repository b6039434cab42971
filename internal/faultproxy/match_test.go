package faultproxy

import (
	"bytes"
	"testing"
)

// feed runs chunks through a stream and returns the index of every chunk in
// which marker was detected.
func feed(marker string, keep int, chunks ...[]byte) []int {
	var s stream
	m := appendLower(nil, []byte(marker))
	var hits []int
	for i, c := range chunks {
		hay, fresh := s.window(c)
		if nextMatch(hay, fresh, -1, m) >= 0 {
			hits = append(hits, i)
		}
		s.keep(hay, keep)
	}
	return hits
}

func TestMatchEverySplit(t *testing.T) {
	t.Parallel()
	const marker = "commit"
	msg := []byte("Q\x00\x00\x00\x0bCoMmIt\x00")
	for i := 1; i < len(msg); i++ {
		for j := i; j < len(msg); j++ {
			chunks := [][]byte{msg[:i], msg[i:j], msg[j:]}
			if i == j {
				chunks = [][]byte{msg[:i], msg[i:]}
			}
			hits := feed(marker, len(marker)-1, chunks...)
			if len(hits) != 1 {
				t.Fatalf("split %d/%d %q: hits %v, want exactly one", i, j, chunks, hits)
			}
		}
	}
}

func TestMatchByteByByte(t *testing.T) {
	t.Parallel()
	msg := []byte(`{"name":"CREATE_TICKET"}`)
	var chunks [][]byte
	for i := range msg {
		chunks = append(chunks, msg[i:i+1])
	}
	hits := feed("create_ticket", len("create_ticket")-1, chunks...)
	if want := bytes.Index(bytes.ToLower(msg), []byte("create_ticket")) + len("create_ticket") - 1; len(hits) != 1 || hits[0] != want {
		t.Fatalf("hits %v, want [%d]", hits, want)
	}
}

func TestMatchDoesNotRetriggerFromTail(t *testing.T) {
	t.Parallel()
	// A generous tail must not let a marker wholly inside the previous chunk
	// match again on the next one.
	hits := feed("commit", 64, []byte("commit"), []byte("x"), []byte("y"))
	if len(hits) != 1 || hits[0] != 0 {
		t.Fatalf("hits %v, want [0]", hits)
	}
}

func TestMatchNoFalsePositive(t *testing.T) {
	t.Parallel()
	if hits := feed("commit", 5, []byte("comm"), []byte("xit"), []byte("commi")); len(hits) != 0 {
		t.Fatalf("hits %v, want none", hits)
	}
}

func TestAppendLowerASCIIOnly(t *testing.T) {
	t.Parallel()
	got := appendLower(nil, []byte("AZaz09_\xc3\x89"))
	if want := []byte("azaz09_\xc3\x89"); !bytes.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
