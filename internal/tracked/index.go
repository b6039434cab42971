package tracked

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker"
)

// The settle window learns from the tracker. A tracker whose search or
// list lags behind its writes (Jira's index always; GitHub's lists under
// load) can hide an issue or comment longer than the window, and a re-send
// then makes a duplicate. So before a re-send ticketd asks whether the
// tracker shows what it last wrote there: the probe is the newest thing
// ticketd recorded as done in the same project (an issue for a create, a
// comment for a comment) and sent no earlier than a settle window before
// this operation's last request. While the tracker does not show the
// probe, its index is behind by at least the probe's age, and nothing is
// re-sent; once it does, the lag it took (first seen less sent) is a bound
// on the index's lag, and the re-send waits that long (and a quarter
// window more) after this operation's last request. A slow index so delays an answer instead of
// making a duplicate. Without a probe, the settle window alone decides.

// indexWatch remembers when each probe was first seen in its tracker:
// the earliest proof of the index's lag. It is this process's; another
// replica or a restart sees the probe later, which only lengthens its wait.
type indexWatch struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// maxWatched bounds indexWatch: older sightings are dropped first.
const maxWatched = 4096

func (w *indexWatch) firstSeen(probe string, now time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]time.Time{}
	}
	if t, ok := w.seen[probe]; ok {
		return t
	}
	if len(w.seen) >= maxWatched {
		oldest := ""
		for k, t := range w.seen {
			if oldest == "" || t.Before(w.seen[oldest]) {
				oldest = k
			}
		}
		delete(w.seen, oldest)
	}
	w.seen[probe] = now
	return now
}

// indexBehind reports, for an operation about to be re-sent, until when
// the tracker's index may still hide its last request's effect, and why;
// a zero time lets the re-send go.
func (e *Engine) indexBehind(ctx context.Context, key operations.Key, row downstreamRow, t tracker.Tracker) (time.Time, string, error) {
	var probes []downstreamRow
	err := e.m.DB().WithContext(ctx).Where("tenant_id = ? AND project_id = ? AND action = ? AND status = ? AND operation_id <> ? AND last_sent_at >= ?",
		key.Tenant, row.ProjectID, key.Action, tickets.DownstreamSucceeded, key.OperationID.String(), row.LastSentAt.Add(-e.opts.Settle)).
		Order("last_sent_at DESC").Limit(1).Find(&probes).Error
	if err != nil {
		return time.Time{}, "", fmt.Errorf("%w: read the last write to the tracker: %v", tickets.ErrUnavailable, err)
	}
	if len(probes) == 0 || probes[0].LastSentAt == nil || probes[0].ExternalID == nil {
		return time.Time{}, "", nil
	}
	p := probes[0]
	shown, err := e.shows(ctx, key, p, t)
	if err != nil {
		return time.Time{}, "", err
	}
	now := time.Now()
	if !shown {
		// Look again in a quarter window: the lag is at least the probe's
		// age, and may end any moment.
		return now.Add(e.opts.Settle / 4), fmt.Sprintf("the tracker does not show %s yet either (sent %s): its index is behind",
			*p.ExternalID, p.LastSentAt.UTC().Format(time.RFC3339)), nil
	}
	// The margin, one look's step, covers a probe seen between two looks
	// and a tracker that filed this operation's request later after its
	// send than it filed the probe's.
	lag := e.index.firstSeen(key.Tenant+"/"+p.Action+"/"+p.OperationID, now).Sub(*p.LastSentAt)
	if until := row.LastSentAt.Add(lag + e.opts.Settle/4); now.Before(until) {
		return until, fmt.Sprintf("the tracker took %s to show %s", lag.Round(time.Second), *p.ExternalID), nil
	}
	return time.Time{}, "", nil
}

// shows reports whether the tracker shows probe's issue (a create) or
// comment (a comment) where reconciliation looks for them.
func (e *Engine) shows(ctx context.Context, key operations.Key, probe downstreamRow, t tracker.Tracker) (bool, error) {
	if key.Action == tickets.ActionAddComment {
		req, err := decodeComment(key, probe)
		if err != nil {
			return false, err
		}
		marker := tracker.ActionMarker(probe.TenantID, probe.Action, probe.OperationID)
		comments, err := t.ListComments(ctx, string(req.Issue), probe.CreatedAt.Add(-listSkew))
		if err != nil {
			return false, fmt.Errorf("list comments of %s: %w", req.Issue, err)
		}
		return slices.ContainsFunc(comments, func(c tracker.Comment) bool { return strings.Contains(c.Body, marker) }), nil
	}
	marked, err := t.FindMarked(ctx, tracker.Mark{Tenant: probe.TenantID, OperationID: probe.OperationID}, probe.CreatedAt.Add(-listSkew))
	if err != nil {
		return false, fmt.Errorf("list marked issues: %w", err)
	}
	return len(marked) > 0, nil
}
