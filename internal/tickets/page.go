package tickets

import (
	"encoding/json"
	"fmt"
)

// MaxPageBytes bounds a list page (docs/contract.md#mcp-tools): a page stops early, with a
// NextCursor, once its items would pass this much JSON, so no list call makes
// the server hold more than a few MiB however large the rows are.
const MaxPageBytes = 1 << 20

// pageItemSlack is added to each item's measured size. Items are measured as
// the JSON of the domain value, whose field names differ slightly from the
// contract's (ProjectID, project_id) and which lacks the separators between
// items; 64 bytes covers both, so the measure errs on the large side.
const pageItemSlack = 64

// fetchBatch is how many rows a list reads at a time. With the largest
// descriptions a batch is about 2 MiB, so a page holds at most the budget
// plus one batch, not limit rows of any size.
const fetchBatch = 32

// fillPage reads rows in keyset order through fetch (rows strictly after
// the given row, or from the list's start when it is nil) and converts them
// until it has limit items or the next item would take the page past
// MaxPageBytes. A page always holds at least one item when one exists, so
// pagination always advances. more reports whether rows remain; last is the
// last row taken, for the next cursor.
func fillPage[R, T any](limit int, fetch func(after *R, n int) ([]R, error), convert func(R) (T, error)) (items []T, last *R, more bool, err error) {
	return fillPageWithin(limit, MaxPageBytes, measureJSON[T], fetch, convert)
}

// measureJSON measures an item as its JSON (domain field names) plus
// pageItemSlack.
func measureJSON[T any](item T) (int, error) {
	b, err := json.Marshal(item)
	if err != nil {
		return 0, fmt.Errorf("measure list item: %w", err)
	}
	return len(b) + pageItemSlack, nil
}

// fillPageWithin is fillPage with the page's byte budget and the measure
// of an item given: a transport that sends less than the whole item (a
// summary) measures what it sends, under a budget of its own.
func fillPageWithin[R, T any](limit, maxBytes int, measure func(T) (int, error), fetch func(after *R, n int) ([]R, error), convert func(R) (T, error)) (items []T, last *R, more bool, err error) {
	// Sized for the first batch: growing by append from empty copied a
	// 20-item page of tickets five times (docs/perf.md).
	items = make([]T, 0, min(limit, fetchBatch))
	total := 0
	var after *R
	for {
		n := min(limit-len(items)+1, fetchBatch)
		rows, err := fetch(after, n)
		if err != nil {
			return nil, nil, false, err
		}
		for i := range rows {
			if len(items) == limit {
				return items, last, true, nil
			}
			item, err := convert(rows[i])
			if err != nil {
				return nil, nil, false, err
			}
			size, err := measure(item)
			if err != nil {
				return nil, nil, false, err
			}
			if len(items) > 0 && total+size > maxBytes {
				return items, last, true, nil
			}
			items, total, last = append(items, item), total+size, &rows[i]
		}
		if len(rows) < n {
			return items, last, false, nil
		}
		after = last
	}
}
